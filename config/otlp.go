package config

import (
	"net"
	"net/url"
)

// OTLP sends the log's runs as traces to an OpenTelemetry collector or
// backend (Jaeger, Tempo, Langfuse…). Empty Endpoint: off.
type OTLP struct {
	// Endpoint is a URL for http/protobuf ("http://127.0.0.1:4318", the
	// path /v1/traces is added) or host:port for grpc ("127.0.0.1:4317").
	Endpoint string `toml:"endpoint"`
	// Protocol is "http/protobuf" (default) or "grpc".
	Protocol string `toml:"protocol"`
	// Headers go with every export (values may hold ${secret:NAME}).
	Headers map[string]string `toml:"headers"`
	// Insecure allows plain-text gRPC (http URLs are plain by their scheme).
	Insecure bool `toml:"insecure"`
	// Resource adds resource attributes (service.name is tracebridge
	// unless set here).
	Resource map[string]string `toml:"resource"`
	// Content exports the redacted arguments and results
	// (gen_ai.tool.call.arguments / .result). Default off.
	Content bool `toml:"content"`
	// Logs also sends each audit envelope as an OTLP log record (for a
	// SIEM that reads OTLP). Default off.
	Logs bool `toml:"logs"`
}

func (c *Config) validateOTLP(bad func(key, format string, args ...any)) {
	o := c.OTLP
	if o.Endpoint == "" {
		if o.Protocol != "" || len(o.Headers) > 0 || len(o.Resource) > 0 {
			bad("otlp.endpoint", "set the endpoint (the collector's OTLP address) or remove [otlp]")
		}
		return
	}
	switch o.Protocol {
	case "", "http/protobuf":
		if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("otlp.endpoint", "%q: http/protobuf wants a URL such as \"http://127.0.0.1:4318\"", o.Endpoint)
		} else if u.User != nil {
			bad("otlp.endpoint", "credentials in the URL would be recorded: put them in headers with a ${secret:NAME} reference")
		}
	case "grpc":
		if _, _, err := net.SplitHostPort(o.Endpoint); err != nil {
			bad("otlp.endpoint", "%q: grpc wants host:port, such as \"127.0.0.1:4317\"", o.Endpoint)
		}
	default:
		bad("otlp.protocol", "%q is not one of http/protobuf, grpc", o.Protocol)
	}
	for _, k := range sortedKeys(o.Headers) {
		for _, ref := range secretRefs(o.Headers[k]) {
			if _, ok := c.Secrets[ref]; !ok {
				bad("otlp.headers", "%s refers to secret %q, which is not defined (add a [secrets.%s] table with env or file)", k, ref, ref)
			}
		}
	}
}
