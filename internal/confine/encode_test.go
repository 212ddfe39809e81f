package confine_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/internal/confine"
	"github.com/tracebridge/tracebridge/internal/landlock"
)

// FuzzSpec: what the bridge encodes the trampoline decodes to the same
// plan (a path holding a newline is left out, never split into another
// grant), and any text the trampoline is handed decodes or is refused
// without a panic.
func FuzzSpec(f *testing.F) {
	f.Add("/usr/bin/node", "/srv/a\n/srv/b", "/etc/passwd", uint16(443), "exec /x\nnet any\nread /usr\n")
	f.Add("/bin/x", "", "/dev/null", uint16(0), "port 99999\n")
	f.Fuzz(func(t *testing.T, exe, writes, read string, port uint16, raw string) {
		landlock.Decode(raw) // no panic on anything
		spec := confine.Spec{Exec: "/" + strings.ReplaceAll(exe, "\n", ""), Net: confine.NetPorts, Read: []string{read}, Write: strings.Split(writes, "\n")}
		if port > 0 {
			spec.Ports = []uint16{port}
		}
		got, err := landlock.Decode(confine.Encode(spec))
		if strings.ContainsRune(spec.Exec, 0) {
			return // an executable that cannot be said cannot be run
		}
		if err != nil {
			t.Fatalf("%q: %v", confine.Encode(spec), err)
		}
		want := spec
		want.Read, want.Write = keep(spec.Read), keep(spec.Write)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, want %+v", got, want)
		}
	})
}

// keep is what survives encoding: non-empty paths without newline or NUL.
func keep(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != "" && !strings.ContainsAny(p, "\n\x00") {
			out = append(out, p)
		}
	}
	return out
}
