package guard

import (
	"encoding/json"
	"maps"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Call is what Args reads of one call.
type Call struct {
	Server      string
	Tool        string // the server's own name for it
	Description string
	Schema      json.RawMessage // the input schema
	Args        json.RawMessage
}

// Args judges a call's arguments with the pack's argument rules:
// credential paths, private and metadata destinations, shell tricks in a
// command-like tool's data arguments, properties the schema never
// declared. (cross-server-secret is Flows'.)
func Args(c Call, act Actions) []Finding {
	var args map[string]any
	if json.Unmarshal(c.Args, &args) != nil || len(args) == 0 {
		return nil
	}
	f := &finder{act: act}
	if f.on("undeclared-property") {
		undeclared(f, c.Schema, args)
	}
	commandLike := f.on("shell-injection") && commandTool.MatchString(Fold(c.Tool+" "+c.Description))
	for _, k := range slices.Sorted(maps.Keys(args)) {
		walkStrings(args[k], "args."+k, func(where, s string) {
			if strings.HasSuffix(where, " key") {
				return
			}
			if f.on("credential-path") {
				if m := credentialPath.FindString(strings.ToLower(s)); m != "" && !exampleFile.MatchString(strings.ToLower(s)) {
					f.add("credential-path", "the argument names a credential file", s, where)
				}
			}
			if f.on("private-destination") {
				if why := privateDestination(s); why != "" {
					f.add("private-destination", "the argument points at "+why, s, where)
				}
			}
			if commandLike && !commandArg.MatchString(k) {
				if m := shellTrick.FindString(s); m != "" {
					f.add("shell-injection", "a data argument of a command-like tool holds a shell separator or substitution ("+strings.TrimSpace(m)+")", s, where)
				}
			}
		})
	}
	return f.out
}

// undeclared flags the top-level properties a schema that declares its
// properties (and does not admit others) does not list.
func undeclared(f *finder, schema json.RawMessage, args map[string]any) {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
		PatternProperties    json.RawMessage            `json:"patternProperties"`
	}
	if json.Unmarshal(schema, &s) != nil || s.Properties == nil || len(s.PatternProperties) > 0 {
		return
	}
	if a := strings.TrimSpace(string(s.AdditionalProperties)); a != "" && a != "false" {
		return // true, or a schema for the others: admitted by the tool
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if _, ok := s.Properties[k]; !ok {
			f.add("undeclared-property", "property "+k+" is not in the tool's input schema", k, "args."+k)
		}
	}
}

var (
	// credentialPath is a path to a file that holds credentials.
	credentialPath = regexp.MustCompile(`(^|[/\\~\s"'=:])(\.ssh/|id_rsa|id_dsa|id_ecdsa|id_ed25519|\.aws/(credentials|config)|/etc/(shadow|gshadow|sudoers|master\.passwd)|\.netrc|\.npmrc|\.pypirc|\.pgpass|\.git-credentials|\.docker/config\.json|\.kube/config|\.gnupg/|\.config/gh/hosts\.yml|\.vault-token)|(^|[/\\])\.env(\.[a-z0-9_-]+)?$`)
	exampleFile    = regexp.MustCompile(`\.(example|sample|template|dist)$|\.pub$`)
	// commandTool is a tool whose name or description says it runs a
	// command or a network probe built from its arguments.
	commandTool = regexp.MustCompile(`\b(shell|commands?|exec|execute[sd]?|terminal|bash|sh|cmd|ping[s6]?|traceroute|nslookup|dig|whois|nmap|curl|wget|subprocess|system call)\b|(^|_)(run|exec|shell|ping6?|cmd)(_|$)`)
	// commandArg is an argument that is itself the command (its shell
	// syntax is the point of the tool).
	commandArg = regexp.MustCompile(`(?i)^(command|cmd|script|code|shell|commandline|command_line)$`)
	// shellTrick is a separator or substitution that starts a second
	// command.
	shellTrick = regexp.MustCompile("(;|&&|\\|\\||\\||`|\\$\\(|\\$\\{|>\\s*/|<\\(|\\n)\\s*[A-Za-z./~$]")
)

// metadataHosts are cloud instance-metadata names.
var metadataHosts = []string{"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.com", "100.100.100.200"}

// privateDestination says what private place s points at when it is a URL
// or a bare host, by its literal address or a metadata name (names are not
// resolved: DNS is not asked on a call's path); "" when none.
func privateDestination(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2048 || strings.ContainsAny(s, " \n") {
		return ""
	}
	host := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return ""
		}
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if slices.Contains(metadataHosts, host) {
		return "a cloud metadata service (" + host + ")"
	}
	ip, ok := literalIP(host)
	if !ok {
		return ""
	}
	switch {
	case ip == netip.MustParseAddr("169.254.169.254") || ip == netip.MustParseAddr("fd00:ec2::254"):
		return "the cloud metadata service (" + ip.String() + ")"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address (" + ip.String() + ")"
	case ip.IsPrivate():
		return "a private-range address (" + ip.String() + ")"
	case ip.IsUnspecified():
		return "the unspecified address (" + ip.String() + ")"
	case netip.MustParsePrefix("100.64.0.0/10").Contains(ip):
		return "a carrier-grade NAT address (" + ip.String() + ")"
	}
	return ""
}

// literalIP reads host as an IP address, in the spellings a URL parser or
// a resolver accepts: dotted, IPv6, IPv4-mapped, and one decimal, octal
// or hex number (http://2852039166/ is 169.254.169.254).
func literalIP(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap(), true
	}
	if host == "" || strings.Contains(host, ".") && !strings.HasPrefix(host, "0x") {
		return dottedOdd(host)
	}
	n, ok := new(big.Int).SetString(host, 0)
	if !ok || n.Sign() < 0 || n.BitLen() > 32 {
		return netip.Addr{}, false
	}
	v := uint32(n.Uint64())
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// dottedOdd reads a dotted address with octal or hex parts (0251.0376.…).
func dottedOdd(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		n, ok := new(big.Int).SetString(p, 0)
		if !ok || n.Sign() < 0 || n.BitLen() > 8 {
			return netip.Addr{}, false
		}
		b[i] = byte(n.Uint64())
	}
	return netip.AddrFrom4(b), true
}
