package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/internal/confine"
	"github.com/tracebridge/tracebridge/projections"
)

// listServers prints each configured server: how it is reached, its
// confinement as configured, and what its last start recorded (the
// executable and its hash, the uid, the confinement applied).
func (m *Main) listServers(ctx context.Context, cfgFlag string, asJSON bool) error {
	cfg, err := m.loadConfigHinted(cfgFlag)
	if err != nil {
		return err
	}
	last := map[string]projections.Spawn{}
	if node, err := m.openLog(ctx, "servers"); err == nil {
		spawns, _ := projections.Read[projections.Spawn](ctx, node, projections.Query{View: projections.ViewSpawns, Limit: 1 << 16})
		for _, s := range spawns {
			last[s.Server] = s
		}
		node.Close()
	}
	type row struct {
		Name       string             `json:"name"`
		Reached    string             `json:"reached"`
		Configured string             `json:"sandbox"`
		LastStart  *projections.Spawn `json:"lastStart,omitempty"`
	}
	var rows []row
	for _, name := range sortedKeys(cfg.Servers) {
		s := cfg.Servers[name]
		r := row{Name: name, Reached: s.Describe(), Configured: s.SandboxWords()}
		if sp, ok := last[name]; ok {
			r.LastStart = &sp
		}
		rows = append(rows, r)
	}
	if asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(m.Stdout, "no [servers.NAME] is configured: `tracebridge servers import FILE` moves a client's servers here")
		return nil
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSANDBOX\tLAST START\tEXECUTABLE\tSHA-256\tUID\tCOMMAND")
	for _, r := range rows {
		start, exe, sum, uid := "never", "-", "-", "-"
		if sp := r.LastStart; sp != nil {
			start = sp.Time.Format("2006-01-02 15:04:05") + " " + sp.Sandbox
			exe, sum, uid = sp.Executable, short(sp.Sha256, 12), sp.UID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Configured, start, exe, sum, uid, r.Reached)
	}
	return tw.Flush()
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// testServer starts a command server once as the gateway would, confined
// as configured, lists its tools, and says what it touched and what it was
// refused. It fails when the server did not answer.
func (m *Main) testServer(ctx context.Context, cfgFlag, name string) error {
	cfg, err := m.loadConfigHinted(cfgFlag)
	if err != nil {
		return err
	}
	srv, ok := cfg.Servers[name]
	if !ok {
		return fmt.Errorf("no [servers.%s] in the configuration (servers: %s)", name, strings.Join(sortedKeys(cfg.Servers), ", "))
	}
	if srv.Command == "" {
		return fmt.Errorf("[servers.%s] is a url server: servers test starts command servers (its confinement is theirs)", name)
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	secrets := executor.ResolvedSecrets(cfg.Secrets, m.Getenv, os.ReadFile)
	fmt.Fprintf(m.Stderr, "starting %s: %s\n", name, srv.Describe())
	p := upstream.ProbeServer(ctx, cfg, name, dir.Servers(), m.Getenv, secrets)
	printProbe(m, name, srv, p)
	if p.Err != nil {
		return errFound
	}
	return nil
}

func printProbe(m *Main, name string, srv config.Server, p upstream.Probe) {
	out := m.Stdout
	fmt.Fprintf(out, "server %s\n  executable %s\n  sandbox    %s\n", name, p.Executable, p.Sandbox)
	if s := p.Spec; s != nil {
		fmt.Fprintf(out, "  may read   %d paths (the system, /etc less its secrets, its install)\n  may change %s\n  network    %s\n",
			len(s.Read), strings.Join(s.Write, ", "), confine.NetWords(*s))
	}
	if p.Err != nil {
		fmt.Fprintf(out, "  FAILED     %v\n", p.Err)
	} else {
		fmt.Fprintf(out, "  answered   %d tools: %s\n", len(p.Tools), strings.Join(p.Tools, ", "))
	}
	if len(p.Touched) > 0 {
		fmt.Fprintln(out, "  touched (open or mapped after tools/list):")
		for _, t := range p.Touched {
			fmt.Fprintln(out, "    "+t)
		}
	}
	for _, r := range p.Refused {
		fmt.Fprintln(out, "  refused    "+r)
	}
	if p.Err != nil && p.Stderr != "" {
		fmt.Fprintln(out, "  stderr     "+p.Stderr)
	}
	if p.Err != nil && p.Spec != nil {
		fmt.Fprintf(out, "  if it needs more: roots = [\"/dir\"] (change), read = [\"/dir\"], network = [\"host:port\"] on [servers.%s], or sandbox = \"off\"\n", name)
	}
}
