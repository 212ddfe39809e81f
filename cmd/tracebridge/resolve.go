package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/config"
)

// resolvePackage pins a package to the version its registry has now:
// npm's with `npm view` (the version, or the newest of a range or tag,
// and its dist.integrity). PyPI is not asked: this build has no client
// for it, and says so.
func resolvePackage(p config.Package) (config.Resolved, error) {
	if p.Manager != "npm" {
		return config.Resolved{}, errors.New("PyPI versions are not looked up by this build")
	}
	spec := p.Name
	if p.Version != "" {
		spec += "@" + p.Version
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "view", spec, "version", "dist.integrity", "--json").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return config.Resolved{}, fmt.Errorf("npm view %s: %s", spec, npmLine(string(ee.Stderr)))
		}
		return config.Resolved{}, fmt.Errorf("npm view %s: %w", spec, err)
	}
	return parseNpmView(out)
}

// parseNpmView reads `npm view … version dist.integrity --json`: one
// object, or (a range matching several versions) a list of them, the
// newest last.
func parseNpmView(out []byte) (config.Resolved, error) {
	type view struct {
		Version   string `json:"version"`
		Integrity string `json:"dist.integrity"`
	}
	var one view
	if err := json.Unmarshal(out, &one); err != nil {
		var many []view
		if err := json.Unmarshal(out, &many); err != nil || len(many) == 0 {
			return config.Resolved{}, fmt.Errorf("npm view answered %q", npmLine(string(out)))
		}
		one = many[len(many)-1]
	}
	if one.Version == "" {
		return config.Resolved{}, fmt.Errorf("npm view named no version: %q", npmLine(string(out)))
	}
	return config.Resolved{Version: one.Version, Integrity: one.Integrity}, nil
}

func npmLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
