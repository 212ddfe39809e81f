package events

import (
	"net/url"
	"regexp"
	"strings"
)

// Hosted MCP servers hand out URLs with the credential inside
// (https://host/api/mcp/s/<secret>/mcp?api_key=<key>), and CLI servers take
// --api-key VALUE: such a URL or command line is configuration, not a
// registered secret, so the redactor would not know to remove it.
// SafeURL and SafeArgs are how they are written to events and logs.

// credentialSegment is a path segment that looks like a credential: 8 or
// more characters mixing letters and digits (ids, keys, tokens).
var credentialSegment = regexp.MustCompile(`^[A-Za-z0-9_~.-]{8,}$`)

func looksLikeCredential(seg string) bool {
	if !credentialSegment.MatchString(seg) {
		return false
	}
	letters, digits := strings.ContainsAny(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), strings.ContainsAny(seg, "0123456789")
	return letters && digits
}

// SafeURL is raw with its user info, every query value and the path
// segments that look like credentials replaced by "REDACTED": what may be
// recorded of an upstream's URL.
func SafeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[REDACTED:url]"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	segs := strings.Split(u.Path, "/")
	for i, s := range segs {
		if looksLikeCredential(s) {
			segs[i] = "REDACTED"
		}
	}
	u.Path, u.RawPath = strings.Join(segs, "/"), ""
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// SafeArgs is args with the value of every flag named like a secret
// (--api-key VALUE, --token=VALUE, -p for a password is not guessed)
// replaced by "REDACTED", and URLs in them made SafeURL.
func SafeArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		switch {
		case strings.HasPrefix(a, "-") && strings.Contains(a, "="):
			k, _, _ := strings.Cut(a, "=")
			if isSecretKey(strings.TrimLeft(k, "-")) {
				out[i] = k + "=REDACTED"
			}
		case i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") && isSecretKey(strings.TrimLeft(args[i-1], "-")):
			out[i] = "REDACTED"
		case strings.Contains(a, "://"):
			out[i] = SafeURL(a)
		}
	}
	return out
}

// URLCredentials are the parts of raw SafeURL removes (user info, query
// values, credential-looking path segments): registered with the redactor,
// they are removed wherever else they appear (a recorded config, an error).
func URLCredentials(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.String())
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	for _, s := range strings.Split(u.Path, "/") {
		if looksLikeCredential(s) {
			out = append(out, s)
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// ArgCredentials are the values SafeArgs removes from args, and the flags
// that named them.
func ArgCredentials(args []string) (values, flags []string) {
	safe := SafeArgs(args)
	for i := range args {
		if safe[i] == args[i] {
			continue
		}
		switch k, v, ok := strings.Cut(args[i], "="); {
		case strings.Contains(args[i], "://"):
			values = append(values, URLCredentials(args[i])...)
			flags = append(flags, "a URL")
		case ok && strings.HasPrefix(k, "-"):
			values, flags = append(values, v), append(flags, k)
		default:
			values, flags = append(values, args[i]), append(flags, args[i-1])
		}
	}
	return values, flags
}
