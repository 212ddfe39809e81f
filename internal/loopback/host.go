package loopback

import (
	"net"
	"strings"
)

// SplitHost splits a Host header into its lowercased name and its port,
// and reports whether the port is port: what both listeners check first
// (a Host naming another port, or none, is DNS rebinding or a mistake).
func SplitHost(hostport, port string) (name string, ok bool) {
	name, p, err := net.SplitHostPort(hostport)
	if err != nil || p != port {
		return "", false
	}
	return strings.ToLower(name), true
}

// IsLoopbackName reports whether a Host name is one of the loopback
// spellings both listeners accept: 127.0.0.1, localhost, ::1 (not
// 127.0.0.2, 0x7f000001, localhost. or a name that resolves to loopback).
func IsLoopbackName(name string) bool {
	switch name {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}
