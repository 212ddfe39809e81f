package main

import (
	"flag"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/hub"
)

// clusterFlags attach a data dir's hub to a NATS JetStream cluster (ADR
// 0012). They are global: mcp, host, up, serve and the operator commands
// all take them. Each unset flag falls back to $TRACEBRIDGE_NATS_<NAME>
// (URL, CREDS, NKEY, CA, CERT, KEY, STREAM, USER, MACHINE) — an AI client's
// config passes environment more easily than arguments — and then to the
// [cluster] section of tracebridge.toml (the default file, or
// $TRACEBRIDGE_CONFIG).
type clusterFlags struct {
	url, creds, nkey, ca, cert, key, stream, user, machine string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "nats-url", c.url, "publish to and collect from the JetStream cluster at `URL` (nats://host:4222[,…]; default $TRACEBRIDGE_NATS_URL); the servers must run with sync_interval: always")
	fs.StringVar(&c.creds, "nats-creds", c.creds, "the cluster user's credentials `FILE` (JWT and nkey seed)")
	fs.StringVar(&c.nkey, "nats-nkey", c.nkey, "a `FILE` holding the cluster user's nkey seed")
	fs.StringVar(&c.ca, "nats-ca", c.ca, "the cluster servers' CA certificate `FILE` (PEM)")
	fs.StringVar(&c.cert, "nats-cert", c.cert, "a client certificate `FILE` for mutual TLS (PEM)")
	fs.StringVar(&c.key, "nats-key", c.key, "the client certificate's key `FILE` (PEM)")
	fs.StringVar(&c.stream, "nats-stream", c.stream, "the JetStream stream `NAME` (default "+hub.DefaultStream+")")
	fs.StringVar(&c.user, "nats-user", c.user, "the origin user `NAME` this machine publishes as: subject tb.log.NAME.MACHINE (default $USER)")
	fs.StringVar(&c.machine, "nats-machine", c.machine, "the origin machine `NAME` (default the host name)")
}

// cluster is the cluster to attach to, or nil for the embedded default.
func (m *Main) cluster() *hub.Cluster {
	c := m.clusterFlags
	var file config.Cluster
	if cfg, err := m.loadConfig(""); err == nil {
		file = cfg.Cluster
	}
	for _, f := range []struct {
		v         *string
		env, file string
	}{{&c.url, "URL", file.URL}, {&c.creds, "CREDS", file.Creds}, {&c.nkey, "NKEY", file.NKey}, {&c.ca, "CA", file.CA},
		{&c.cert, "CERT", file.Cert}, {&c.key, "KEY", file.Key}, {&c.stream, "STREAM", file.Stream},
		{&c.user, "USER", file.User}, {&c.machine, "MACHINE", file.Machine}} {
		if *f.v == "" {
			*f.v = m.Getenv("TRACEBRIDGE_NATS_" + f.env)
		}
		if *f.v == "" {
			*f.v = f.file
		}
	}
	if c.url == "" {
		return nil
	}
	return &hub.Cluster{URL: c.url, Creds: c.creds, NKey: c.nkey, CA: c.ca, Cert: c.cert, Key: c.key,
		Stream: c.stream, User: c.user, Machine: c.machine}
}
