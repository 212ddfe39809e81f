package config

import (
	"net/url"
	"strings"
)

// Cluster attaches the data dir's hub to a NATS JetStream cluster (ADR
// 0012). Empty URL: off, the embedded hub. Flags (--nats-*) and
// $TRACEBRIDGE_NATS_* override each key.
type Cluster struct {
	URL     string `toml:"url"`     // nats://host:4222[,…]
	Creds   string `toml:"creds"`   // a .creds file
	NKey    string `toml:"nkey"`    // a file holding an nkey seed
	CA      string `toml:"ca"`      // the servers' CA (PEM)
	Cert    string `toml:"cert"`    // client certificate (PEM), for mutual TLS
	Key     string `toml:"key"`     // its key (PEM)
	Stream  string `toml:"stream"`  // default TRACEBRIDGE
	User    string `toml:"user"`    // origin: subject tb.log.<user>.<machine>
	Machine string `toml:"machine"` // default the host name
}

func (c *Config) validateCluster(bad func(key, format string, args ...any)) {
	cl := c.Cluster
	for _, u := range strings.Split(cl.URL, ",") {
		if cl.URL == "" {
			break
		}
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil || p.Host == "" || (p.Scheme != "nats" && p.Scheme != "tls" && p.Scheme != "ws" && p.Scheme != "wss") {
			bad("cluster.url", "%q is not a server URL such as nats://host:4222 (several: comma-separated)", u)
		}
	}
	if cl.URL == "" && (cl.Creds != "" || cl.NKey != "" || cl.Stream != "" || cl.User != "") {
		bad("cluster.url", "is empty, so the other cluster settings do nothing")
	}
	if cl.Creds != "" && cl.NKey != "" {
		bad("cluster.nkey", "give creds or nkey, not both")
	}
	if (cl.Cert == "") != (cl.Key == "") {
		bad("cluster.cert", "cert and key go together (mutual TLS)")
	}
	for key, v := range map[string]string{"cluster.user": cl.User, "cluster.machine": cl.Machine} {
		if strings.ContainsAny(v, ".*> \t") {
			bad(key, "%q must be one subject token: no dots, spaces, * or >", v)
		}
	}
}
