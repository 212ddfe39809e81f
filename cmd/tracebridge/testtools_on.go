//go:build tb_testtools

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
)

// testTools are compiled only into the binary the end-to-end tests build
// (`-tags tb_testtools`): tools that misbehave on purpose.
func testTools() []*executor.Tool {
	type args struct {
		Text   string `json:"text,omitempty"`
		Marker string `json:"marker,omitempty"`
		Ms     int    `json:"ms,omitempty"`
	}
	schema := executor.SchemaFor[args]()
	parse := func(c executor.Call) args {
		var a args
		json.Unmarshal(c.Args, &a)
		return a
	}
	desc := func(id string) executor.Descriptor {
		return executor.Descriptor{ID: id, Category: "test", Source: "tb_testtools", Capabilities: []string{config.CapTextSearch},
			Description: "test tool " + id}
	}
	return []*executor.Tool{
		{Descriptor: desc("test_panic"), InputSchema: schema, Run: func(_ context.Context, c executor.Call) (any, error) {
			panic("test_panic: " + parse(c).Text)
		}},
		{Descriptor: desc("test_stdout"), InputSchema: schema, Run: func(_ context.Context, c executor.Call) (any, error) {
			fmt.Println("stray line on stdout from a tool")
			os.Stdout.WriteString("{\"jsonrpc\":\"2.0\",\"method\":\"forged\"}\n")
			return map[string]string{"wrote": "stdout"}, nil
		}},
		{Descriptor: desc("test_sleep"), InputSchema: schema, Run: func(ctx context.Context, c executor.Call) (any, error) {
			select {
			case <-time.After(time.Duration(parse(c).Ms) * time.Millisecond):
				return map[string]string{"slept": "yes"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}},
		{Descriptor: desc("test_echo"), InputSchema: schema, Run: func(_ context.Context, c executor.Call) (any, error) {
			a := parse(c)
			return map[string]any{"text": a.Text, "secrets": c.Secrets}, nil
		}},
		{Descriptor: func() executor.Descriptor {
			d := desc("test_write")
			d.Capabilities, d.SideEffects, d.Approval = []string{config.CapWorkspaceWrite}, true, "always"
			return d
		}(), InputSchema: schema, Run: func(_ context.Context, c executor.Call) (any, error) {
			return map[string]string{"wrote": parse(c).Marker}, os.WriteFile(parse(c).Marker, []byte("ran"), 0o600)
		}},
	}
}

// archiveFailpoint kills this process with SIGKILL after the archive step
// TB_FAILPOINT_ARCHIVE names (segment, manifest, drop): how the end-to-end
// test crashes an archive at every step. Compiled only into -tags
// tb_testtools builds.
func archiveFailpoint(step string) {
	if step == os.Getenv("TB_FAILPOINT_ARCHIVE") {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
	}
}
