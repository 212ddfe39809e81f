// Package landlock is the kernel side of a confined upstream: the Landlock
// ABI this kernel offers, a thread restricting itself to Rules, and the
// trampoline (Verb) that does so before exec'ing the server. It imports
// only what package syscall itself needs: Go initializes a package as
// soon as its imports are, so the trampoline runs before nearly all of a
// large binary's packages are initialized (a start of the binary is its
// whole cost: BenchmarkUpstreamStart).
package landlock

import "errors"

// Verb is the hidden first argument that makes a process (any binary
// importing this package) the trampoline.
const Verb = "__confine"

// EnvSpec carries the encoded Rules to the trampoline, which removes it
// before the exec.
const EnvSpec = "TRACEBRIDGE_CONFINE"

// Network modes.
const (
	NetAny   = "any"   // TCP not restricted
	NetNone  = "none"  // no TCP connect or bind
	NetPorts = "ports" // TCP connect to Ports only, no bind
)

// Rules are what a confined process may do: paths it may read (and run)
// beneath, paths it may change beneath, device files it may read and
// write, its TCP network, and the executable to run.
type Rules struct {
	Exec    string
	Read    []string
	Write   []string
	Devices []string
	Net     string
	Ports   []uint16
}

// Decode reads the lines "field value" the bridge wrote (confine.Encode):
// exec, net, read, write, dev and port.
func Decode(s string) (Rules, error) {
	var r Rules
	for _, l := range split(s, '\n') {
		if l == "" {
			continue
		}
		k, v := cut(l, ' ')
		if v == "" {
			return Rules{}, errors.New("a rule line is not \"field value\": " + l)
		}
		switch k {
		case "exec":
			r.Exec = v
		case "net":
			r.Net = v
		case "read":
			r.Read = append(r.Read, v)
		case "write":
			r.Write = append(r.Write, v)
		case "dev":
			r.Devices = append(r.Devices, v)
		case "port":
			n := atoi(v)
			if n <= 0 || n > 65535 {
				return Rules{}, errors.New("not a port: " + v)
			}
			r.Ports = append(r.Ports, uint16(n))
		default:
			return Rules{}, errors.New("unknown rule field " + k)
		}
	}
	if r.Exec == "" || (r.Net != NetAny && r.Net != NetNone && r.Net != NetPorts) {
		return Rules{}, errors.New("the rules name no executable or no network mode")
	}
	return r, nil
}

// The few string helpers the trampoline needs, written here: this package
// imports only what package syscall does (see the package comment).

func split(s string, sep byte) []string {
	var out []string
	for {
		i := indexByte(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

func cut(s string, sep byte) (string, string) {
	if i := indexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// atoi is a decimal number of at most 6 digits, or -1.
func atoi(s string) int {
	if s == "" || len(s) > 6 {
		return -1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
