package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/tracebridge/tracebridge/config"
)

// MaxNameLen is the longest tool name clients accept (^[A-Za-z0-9_-]{1,64}$).
const MaxNameLen = 64

// toolName is the name an upstream tool is exposed under: server__tool, with
// every character clients do not accept written as '_'. A name longer than
// 64 characters keeps its first 55 and ends with '_' and 8 hex digits of the
// SHA-256 of server and tool, so it stays stable and distinct.
func toolName(server, tool string) string {
	name := clean(server) + config.Sep + clean(tool)
	if len(name) <= MaxNameLen && clean(tool) == tool {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(name) > MaxNameLen-len(suffix) {
		name = name[:MaxNameLen-len(suffix)]
	}
	return name + suffix
}

// exposed is the name the server's tool or prompt is exposed under:
// ToolName's, or with prefix = false the tool's own name (written with the
// same rules when clients would not accept it).
func (s *Server) exposed(tool string) string {
	if s.cfg.Prefixed() {
		return toolName(s.name, tool)
	}
	if c := clean(tool); c == tool && len(c) <= MaxNameLen && c != "" {
		return tool
	}
	return toolName(s.name, tool)
}

// clean keeps [A-Za-z0-9_-] and writes '_' for anything else.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
