package lineconn

import (
	"bytes"
	"encoding/json"
)

// wireKeys are the members of a JSON-RPC message Decode reads.
var wireKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// members is json.Unmarshal of data into a map[string]json.RawMessage, for
// the keys Decode reads: what the map would hold under them (the last of
// duplicate keys, keys unescaped and matched exactly, values as written),
// and the same error when data is not one JSON object. A valid object is
// split in one pass after json.Valid, its values slices of data (the
// caller's, not reused), with no copy of a value and no map of the keys
// Decode ignores: the map's decode was ~3% of a call through the bridge.
func members(data []byte) (map[string]json.RawMessage, error) {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' || !json.Valid(data) {
		var m map[string]json.RawMessage
		err := json.Unmarshal(data, &m) // the slow path keeps encoding/json's words
		return m, err
	}
	m := make(map[string]json.RawMessage, 4)
	i := skipSpace(t, 1)
	for i < len(t) && t[i] != '}' {
		end := skipString(t, i)
		key := t[i+1 : end-1]
		i = skipSpace(t, skipSpace(t, end)+1) // past the colon
		vend := skipValue(t, i)
		if name := wireKey(key); name != "" {
			m[name] = json.RawMessage(t[i:vend])
		}
		i = skipSpace(t, vend)
		if t[i] == ',' {
			i = skipSpace(t, i+1)
		}
	}
	return m, nil
}

// wireKey is the wire key key names once unescaped, or "".
func wireKey(key []byte) string {
	if bytes.IndexByte(key, '\\') >= 0 {
		var s string
		if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) != nil {
			return ""
		}
		key = []byte(s)
	}
	for _, k := range wireKeys {
		if string(key) == k {
			return k
		}
	}
	return ""
}

func skipSpace(t []byte, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n') {
		i++
	}
	return i
}

// skipString is the index past the string that starts at t[i] (a quote).
func skipString(t []byte, i int) int {
	for i++; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue is the index past the value that starts at t[i] (valid JSON).
func skipValue(t []byte, i int) int {
	switch t[i] {
	case '"':
		return skipString(t, i)
	case '{', '[':
		depth := 0
		for ; i < len(t); i++ {
			switch t[i] {
			case '"':
				i = skipString(t, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(t) && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\t' && t[i] != '\r' && t[i] != '\n' {
		i++
	}
	return i
}
