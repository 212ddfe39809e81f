package config

import (
	"bufio"
	"bytes"
	"strings"
)

// keyLines maps each dotted key (and table) of a TOML file to the line it
// is set on, so problems found after decoding can name a line. It follows
// [table] headers and `key =` lines, which is what tracebridge.toml uses.
func keyLines(b []byte) map[string]int {
	lines := map[string]int{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "[") && !strings.HasPrefix(l, "[["):
			table = strings.Trim(strings.TrimSpace(strings.SplitN(l, "]", 2)[0]), "[ ")
			table = strings.ReplaceAll(table, "\"", "")
			if _, ok := lines[table]; !ok {
				lines[table] = n
			}
		default:
			if k, _, ok := strings.Cut(l, "="); ok {
				key := strings.Trim(strings.TrimSpace(k), "\"")
				if table != "" {
					key = table + "." + key
				}
				if _, ok := lines[key]; !ok {
					lines[key] = n
				}
			}
		}
	}
	return lines
}

// lineOf returns the line of key, else of its nearest enclosing table, else 1.
func lineOf(lines map[string]int, key string) int {
	for k := key; k != ""; {
		if n, ok := lines[k]; ok {
			return n
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 1
}
