package sessions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// What differs in an answer between a recording and its re-drive without
// any behaviour changing: ids drawn from another source, the wall clock,
// a redaction fingerprint under another key, and _meta (the bridge's
// request id, progress tokens). They are compared as placeholders.
var (
	ulidRE     = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	timeRE     = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	redactedRE = regexp.MustCompile(`\[REDACTED:([a-z0-9_.-]+):[0-9a-f]{8}\]`)
	// Durations in JSON held in a text (a trace tool's answer): the
	// re-drive's clock stands still.
	msRE = regexp.MustCompile(`(\\?"[A-Za-z]*Ms\\?":)-?[0-9][0-9.e+-]*`)
	// A request's JSON-RPC id quoted by a trace tool's answer: the
	// re-drive's client numbers its requests its own way.
	rpcIDRE = regexp.MustCompile(`(\\?"jsonrpcId\\?":\s*\\?")[^"\\]*`)
)

// answerDiff compares the answer a client got in the recording with the
// one it got in the re-drive. It returns "" when they agree, else where
// they first differ (a JSON path such as result.content[0].text) and the
// two values there.
func answerDiff(want, got string) (at, w, g string) {
	var a, b any
	if json.Unmarshal([]byte(want), &a) != nil {
		return "", "", "" // a recording that cannot be read compares with nothing
	}
	if err := json.Unmarshal([]byte(got), &b); err != nil {
		return "the answer", clip(want), "not JSON: " + clip(got)
	}
	return firstDiff("", withoutVersion(normal(a)), withoutVersion(normal(b)))
}

// withoutVersion is an initialize answer without the bridge's version: a
// new build is not a new behaviour.
func withoutVersion(v any) any {
	if m, ok := v.(map[string]any); ok {
		if r, ok := m["result"].(map[string]any); ok {
			if info, ok := r["serverInfo"].(map[string]any); ok {
				delete(info, "version")
			}
		}
	}
	return v
}

// normal is v with the placeholders in, without _meta.
func normal(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch {
			case k == "_meta":
			case strings.HasSuffix(k, "Ms"):
				out[k] = "<ms>" // a duration: the re-drive's clock stands still
			default:
				out[k] = normal(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normal(e)
		}
		return out
	case string:
		x = ulidRE.ReplaceAllString(x, "<id>")
		x = timeRE.ReplaceAllString(x, "<time>")
		x = msRE.ReplaceAllString(x, "$1<ms>")
		x = rpcIDRE.ReplaceAllString(x, "$1<n>")
		return redactedRE.ReplaceAllString(x, "[REDACTED:$1]")
	}
	return v
}

func firstDiff(path string, a, b any) (at, w, g string) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			return firstDiffObject(path, x, y)
		}
	case []any:
		if y, ok := b.([]any); ok {
			return firstDiffArray(path, x, y)
		}
	}
	if string(mustJSON(a)) == string(mustJSON(b)) {
		return "", "", ""
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok && (len(x) > 200 || len(y) > 200) {
			return firstDiffText(path, x, y)
		}
	}
	return pathName(path), show(a), show(b)
}

// pathName is how a drift line names path: the answer itself at the root.
func pathName(path string) string {
	if path == "" {
		return "the answer"
	}
	return path
}

// firstDiffObject compares two objects key by key, in key order.
func firstDiffObject(path string, x, y map[string]any) (at, w, g string) {
	keys := make([]string, 0, len(x)+len(y))
	for k := range x {
		keys = append(keys, k)
	}
	for k := range y {
		if _, dup := x[k]; !dup {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		xv, inA := x[k]
		yv, inB := y[k]
		switch {
		case !inA:
			return p, "(none)", show(yv)
		case !inB:
			return p, show(xv), "(none)"
		}
		if at, w, g := firstDiff(p, xv, yv); at != "" {
			return at, w, g
		}
	}
	return "", "", ""
}

// firstDiffArray compares two arrays item by item, then their lengths.
func firstDiffArray(path string, x, y []any) (at, w, g string) {
	for i := range min(len(x), len(y)) {
		if at, w, g := firstDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); at != "" {
			return at, w, g
		}
	}
	if len(x) != len(y) {
		return pathName(path), fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d items", len(y))
	}
	return "", "", ""
}

// firstDiffText shows two long texts from a little before the first byte
// that differs (never inside a UTF-8 sequence).
func firstDiffText(path, x, y string) (at, w, g string) {
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	from := max(0, i-40)
	for from > 0 && from < len(x) && x[from]&0xC0 == 0x80 {
		from--
	}
	return fmt.Sprintf("%s (from byte %d)", pathName(path), from), show(x[min(from, len(x)):]), show(y[min(from, len(y)):])
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return clip(string(b))
}

// clip keeps a drift line readable: a value over 200 bytes is cut there.
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a rune
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
