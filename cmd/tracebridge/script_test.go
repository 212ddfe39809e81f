package main

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs testdata/script/*.txtar against the real binary: each
// script documents a command's usage, output and exit code at once.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(tbBin)+string(filepath.ListSeparator)+env.Getenv("PATH"))
			env.Setenv("TRACEBRIDGE_DATA", filepath.Join(env.WorkDir, "data"))
			return nil
		},
	})
}
