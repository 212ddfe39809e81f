package config

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
)

// Confined reports whether a command server runs confined (the default;
// sandbox = "off" opts out). URL servers run elsewhere.
func (s Server) Confined() bool { return s.Command != "" && s.Sandbox != "off" }

// Network is a command server's TCP network under confinement: "any"
// (the default), "none", or "ports" with the ports of the host:port
// entries it was given (Landlock filters ports, not hosts: the hosts are
// recorded, not enforced).
func (s Server) Network() (mode string, ports []uint16, hosts []string) {
	switch v := s.NetworkRaw.(type) {
	case nil:
		return "any", nil, nil
	case string:
		return v, nil, nil
	case []any:
		for _, e := range v {
			str, _ := e.(string)
			h, p, err := net.SplitHostPort(str)
			n, perr := strconv.ParseUint(p, 10, 16)
			if err != nil || perr != nil || n == 0 {
				continue
			}
			hosts = append(hosts, h)
			if !slices.Contains(ports, uint16(n)) {
				ports = append(ports, uint16(n))
			}
		}
		return "ports", ports, hosts
	}
	return "invalid", nil, nil
}

// validateSandbox checks sandbox, network, roots and read.
func validateSandbox(key string, s Server, bad func(key, format string, args ...any)) {
	if s.Sandbox != "" && s.Sandbox != "on" && s.Sandbox != "off" {
		bad(key+".sandbox", "%q is not on or off", s.Sandbox)
	}
	if s.URL != "" {
		if s.Sandbox != "" || s.NetworkRaw != nil || len(s.Roots) > 0 || len(s.Read) > 0 {
			bad(key, "sandbox, network, roots and read confine command servers; a url server runs elsewhere")
		}
		return
	}
	switch v := s.NetworkRaw.(type) {
	case nil:
	case string:
		if v != "any" && v != "none" {
			bad(key+".network", "%q is not \"any\", \"none\" or a list of \"host:port\"", v)
		}
	case []any:
		for _, e := range v {
			str, _ := e.(string)
			_, p, err := net.SplitHostPort(str)
			if n, perr := strconv.ParseUint(p, 10, 16); err != nil || perr != nil || n == 0 {
				bad(key+".network", "%v is not host:port (a TCP port 1-65535 the server may connect to)", e)
			}
		}
	default:
		bad(key+".network", "want \"any\", \"none\" or a list of \"host:port\"")
	}
	for _, f := range []struct {
		field string
		paths []string
	}{{"roots", s.Roots}, {"read", s.Read}} {
		for _, p := range f.paths {
			switch {
			case !filepath.IsAbs(p):
				bad(key+"."+f.field, "%q is not an absolute path", p)
			case filepath.Clean(p) == "/" && f.field == "roots":
				bad(key+".roots", "\"/\" would let the server change every file: name the folders it needs, or set sandbox = \"off\"")
			}
		}
	}
}

// SandboxWords says a server's confinement as config check and servers
// list show it.
func (s Server) SandboxWords() string {
	if !s.Confined() {
		if s.URL != "" {
			return "n/a (url)"
		}
		return "off"
	}
	mode, ports, _ := s.Network()
	if mode == "ports" {
		return fmt.Sprintf("on, tcp %v", ports)
	}
	return "on, network " + mode
}
