package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tracebridge/tracebridge/events"
)

// tagResult adds _meta["tracebridge/requestId"] to a tools/call result and
// says whether it is an error result. The request id is spliced into the
// bytes as they are (one scan of the top level, no decode and re-encode of
// a result that may be megabytes); a result the splice cannot be sure of
// (not an object, an escaped key, a _meta that is not an object, has an
// escape or already names the key) takes the decoding path.
func tagResult(raw json.RawMessage, req events.ID) (json.RawMessage, bool) {
	if !json.Valid(raw) {
		return raw, false
	}
	meta, isError, ok := topLevel(raw)
	if !ok {
		return tagResultDecoded(raw, req)
	}
	entry := `"` + MetaRequestID + `":"` + req.String() + `"`
	var out []byte
	switch {
	case meta[0] < 0: // no _meta: one, first
		open := bytes.IndexByte(raw, '{')
		sep := ","
		if rest := bytes.TrimSpace(raw[open+1:]); len(rest) > 0 && rest[0] == '}' {
			sep = ""
		}
		out = make([]byte, 0, len(raw)+len(entry)+12)
		out = append(append(append(append(out, raw[:open+1]...), `"_meta":{`+entry+`}`...), sep...), raw[open+1:]...)
	default:
		v := raw[meta[0]:meta[1]]
		// An escape may spell the key (tracebridge\/requestId): decode.
		if v[0] != '{' || bytes.Contains(bytes.ToLower(v), []byte(strings.ToLower(MetaRequestID))) || bytes.IndexByte(v, '\\') >= 0 {
			return tagResultDecoded(raw, req)
		}
		sep := ","
		if len(bytes.TrimSpace(v[1:len(v)-1])) == 0 {
			sep = ""
		}
		at := meta[0] + 1
		out = make([]byte, 0, len(raw)+len(entry)+1)
		out = append(append(append(append(out, raw[:at]...), entry...), sep...), raw[at:]...)
	}
	return out, isError
}

// topLevel scans the JSON object raw (valid JSON) for its top-level _meta
// value's span ({-1,-1}: none) and whether isError is true; ok is false
// for anything but an object of plainly written keys, each once and in no
// other case.
func topLevel(raw []byte) (meta [2]int, isError, ok bool) {
	meta = [2]int{-1, -1}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return meta, false, false
	}
	i++
	seenError := false
	for {
		i = skipSpace(raw, i)
		if raw[i] == '}' {
			return meta, isError, true
		}
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		end := bytes.IndexByte(raw[i+1:], '"') + i + 1 // a key: valid JSON, so a string
		key := raw[i+1 : end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return meta, false, false // an escaped key may spell _meta: decode
		}
		i = skipSpace(raw, end+1) + 1 // past ':'
		i = skipSpace(raw, i)
		vend := skipValue(raw, i)
		switch k := string(key); {
		case k != "_meta" && k != "isError" && (strings.EqualFold(k, "_meta") || strings.EqualFold(k, "isError")):
			return meta, false, false // Go's decoder takes _META for _meta: decode, so _meta comes last
		case k == "_meta":
			if meta[0] >= 0 {
				return meta, false, false // twice: which one wins is the decoder's call
			}
			meta = [2]int{i, vend}
		case k == "isError":
			if seenError {
				return meta, false, false
			}
			seenError, isError = true, string(raw[i:vend]) == "true"
		}
		i = vend
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the (valid) JSON value starting at i.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of the enclosing object: a scalar ended here
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
