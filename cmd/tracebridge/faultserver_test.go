package main

//lint:file-ignore SA1019 the tests drive MCP logging, deprecated in 2026-07-28 but in its window

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// runFaultUpstream is an MCP server (go-sdk, stdio) that misbehaves on
// demand, run from this test binary as an upstream of the bridge
// (TB_FAULT_UPSTREAM=1). Its tool ok's description is read from the file
// TB_FAULT_DESC names, so a test can change the descriptor between two
// starts; TB_FAULT_MARK names a file each call appends the tool's name to,
// so a test sees from the upstream's side which calls reached it.
func runFaultUpstream() {
	// TB_FAULT_NEEDS=PATH: a server that reads PATH as it starts and
	// dies, saying why, when it cannot.
	if f := os.Getenv("TB_FAULT_NEEDS"); f != "" {
		if _, err := os.ReadFile(f); err != nil {
			fmt.Fprintln(os.Stderr, "fatal: cannot start:", err)
			os.Exit(1)
		}
	}
	desc := "answers ok"
	if f := os.Getenv("TB_FAULT_DESC"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			desc = strings.TrimSpace(string(b))
		}
	}
	mark := func(name string) {
		if f := os.Getenv("TB_FAULT_MARK"); f != "" {
			fh, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err == nil {
				fmt.Fprintln(fh, name)
				fh.Close()
			}
		}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "fault", Version: "1"}, &sdk.ServerOptions{
		Capabilities:       &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}, Tools: &sdk.ToolCapabilities{ListChanged: true}},
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
	})
	type textArgs struct {
		Text string `json:"text,omitempty"`
	}
	add := func(name, d string, ro bool, h func(ctx context.Context, req *sdk.CallToolRequest, a textArgs) (string, error)) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: d, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro}},
			func(ctx context.Context, req *sdk.CallToolRequest, a textArgs) (*sdk.CallToolResult, any, error) {
				mark(name)
				text, err := h(ctx, req, a)
				if err != nil {
					return nil, nil, err
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
			})
	}
	add("ok", desc, true, func(_ context.Context, req *sdk.CallToolRequest, a textArgs) (string, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return "ok " + a.Text + " env=" + os.Getenv("TB_FAULT_SECRET") + " traceparent=" + tp, nil
	})
	writeDesc := func() string {
		if f := os.Getenv("TB_FAULT_WRITE_DESC"); f != "" {
			if b, err := os.ReadFile(f); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		return "changes something"
	}
	addWrite := func() {
		add("write", writeDesc(), false, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (string, error) {
			return "written " + a.Text, nil
		})
	}
	if !strings.Contains(desc, "HIDE-WRITE") { // a test removes the tool between two starts
		addWrite()
	}
	// TB_FAULT_WATCH=1: a changed TB_FAULT_WRITE_DESC re-adds write with
	// the new description at run time (the SDK says tools/list_changed).
	if os.Getenv("TB_FAULT_WATCH") == "1" {
		go func() {
			last := writeDesc()
			for range time.Tick(50 * time.Millisecond) {
				if d := writeDesc(); d != last {
					last = d
					addWrite()
				}
			}
		}()
	}
	add("env", "answers its environment", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		return strings.Join(os.Environ(), "\n"), nil
	})
	// structured declares an output schema (the go-sdk derives it); its
	// description is TB_FAULT_STRUCT_DESC's file when set (a test changes
	// it between two starts).
	structDesc := "answers with structured content"
	if f := os.Getenv("TB_FAULT_STRUCT_DESC"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			structDesc = strings.TrimSpace(string(b))
		}
	}
	type structOut struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "structured", Description: structDesc, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (*sdk.CallToolResult, structOut, error) {
			mark("structured")
			if a.Text == "fail" {
				return nil, structOut{}, errors.New("failing on purpose")
			}
			return nil, structOut{Text: "ok " + a.Text}, nil
		})
	// try attempts one access — read:PATH, write:PATH, connect:HOST:PORT —
	// and answers "ok" or "refused: why"; crash:PATH reads and, refused,
	// says why on stderr and exits 1 (a server that cannot start).
	add("try", "attempts one access and says how it went", true, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (string, error) {
		verb, arg, _ := strings.Cut(a.Text, ":")
		var err error
		switch verb {
		case "read", "crash":
			_, err = os.ReadFile(arg)
		case "write":
			err = os.WriteFile(arg, []byte("x"), 0o600)
		case "connect":
			var c net.Conn
			if c, err = net.DialTimeout("tcp", arg, 5*time.Second); err == nil {
				c.Close()
			}
		}
		if err != nil && verb == "crash" {
			fmt.Fprintln(os.Stderr, "fatal:", err)
			os.Exit(1)
		}
		if err != nil {
			return "refused: " + err.Error(), nil
		}
		return "ok", nil
	})
	add("exit", "answers, then exits", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		time.AfterFunc(50*time.Millisecond, func() { os.Exit(0) })
		return "exiting", nil
	})
	add("stderrline", "writes one 70 KB stderr line", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		fmt.Fprintln(os.Stderr, strings.Repeat("L", 70000))
		return "wrote a long line", nil
	})
	add("stderrflood", "writes 2000 stderr lines", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		for i := range 2000 {
			fmt.Fprintf(os.Stderr, "flood %d %s\n", i, strings.Repeat("E", 100))
		}
		return "flooded", nil
	})
	add("spawn", "starts a child that stays in its process group, its pid written to the file text names", true, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (string, error) {
		c := exec.Command("sleep", "300")
		file, escape := strings.CutPrefix(a.Text, "setsid:") // a child that leaves the group for a session of its own
		if escape {
			detach(c)
		}
		if f, ok := strings.CutPrefix(file, "stderr:"); ok { // and holds the upstream's stderr, as a forked child does
			file, c.Stderr = f, os.Stderr
		}
		if err := c.Start(); err != nil {
			return "", err
		}
		return "spawned", os.WriteFile(file, []byte(fmt.Sprint(c.Process.Pid)), 0o600)
	})
	add("listflood", "changes a tool 100 times, one tools/list_changed each (the SDK folds changes within 10ms)", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		for i := range 100 {
			add("churn", fmt.Sprintf("churn %d", i), true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) { return "churned", nil })
			time.Sleep(15 * time.Millisecond)
		}
		return "flooded", nil
	})
	add("logflood", "sends 2000 log messages", true, func(ctx context.Context, req *sdk.CallToolRequest, _ textArgs) (string, error) {
		for i := range 2000 {
			req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "flood", Data: fmt.Sprintf("m%d %s", i, strings.Repeat("x", 200))})
		}
		return "logged", nil
	})
	add("crash", "exits mid-call", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		fmt.Fprintln(os.Stderr, "fault upstream: crashing on purpose")
		os.Exit(3)
		return "", nil
	})
	add("hang", "never answers", true, func(ctx context.Context, _ *sdk.CallToolRequest, _ textArgs) (string, error) {
		<-ctx.Done()
		mark("hang-cancelled")
		return "", ctx.Err()
	})
	add("garbage", "writes garbage to stdout", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		os.Stdout.WriteString("this is not JSON-RPC\n")
		time.Sleep(2 * time.Second)
		return "late", nil
	})
	add("big", "writes a 20 MiB line, past the frame cap (raw: encoding it as JSON took seconds under -race)", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 20<<20) + "\"}}\n")
		time.Sleep(2 * time.Second)
		return "late", nil
	})
	add("sized", "answers as many bytes as text says, with $TB_FAULT_CANARY in the middle", true, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (string, error) {
		n, err := strconv.Atoi(a.Text)
		if err != nil {
			return "", err
		}
		c := os.Getenv("TB_FAULT_CANARY")
		return strings.Repeat("a", n/2) + c + strings.Repeat("b", max(0, n-n/2-len(c))), nil
	})
	add("fails", "answers a tool error", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		return "", fmt.Errorf("the fault upstream fails on purpose")
	})
	add("grow", "adds a tool (list_changed)", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) {
		add("extra", "a tool added later", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) { return "extra", nil })
		return "grown", nil
	})
	add("log", "sends a log message", true, func(ctx context.Context, req *sdk.CallToolRequest, _ textArgs) (string, error) {
		req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "faults", Data: "a log line from the upstream"})
		return "logged", nil
	})
	add("slow", "reports progress, then answers", true, func(ctx context.Context, req *sdk.CallToolRequest, _ textArgs) (string, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 3; i++ {
				req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: "step"})
			}
		}
		return "slow done", nil
	})
	add("touch", "tells the sessions subscribed to the resource named by text that it changed", true, func(ctx context.Context, _ *sdk.CallToolRequest, a textArgs) (string, error) {
		return "touched", s.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: a.Text})
	})
	add("addprompt", "adds a prompt named by text (the server says prompts/list_changed)", true, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (string, error) {
		s.AddPrompt(&sdk.Prompt{Name: a.Text}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "added later"}}}}, nil
		})
		return "added", nil
	})
	add("roots", "answers the client's roots (it asks the client for them)", true, func(ctx context.Context, req *sdk.CallToolRequest, _ textArgs) (string, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return "", err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return "roots: " + strings.Join(uris, " "), nil
	})
	add("sample", "asks the client for a sampling of text and answers what it got", true, func(ctx context.Context, req *sdk.CallToolRequest, a textArgs) (string, error) {
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: a.Text}}}})
		if err != nil {
			return "sampling refused: " + err.Error(), nil
		}
		return fmt.Sprintf("sampled: %v", res.Content), nil
	})
	add("ticker", "reports progress every 300ms, TB_FAULT_TICKS times (default 5), then answers", true, func(ctx context.Context, req *sdk.CallToolRequest, _ textArgs) (string, error) {
		ticks, _ := strconv.Atoi(os.Getenv("TB_FAULT_TICKS"))
		if ticks <= 0 {
			ticks = 5
		}
		for i := 1; i <= ticks; i++ {
			time.Sleep(300 * time.Millisecond)
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(ticks), Message: "tick"})
			}
		}
		return "ticked", nil
	})
	// TB_FAULT_NTOOLS=N: N more tools, t0000…, at start.
	if n, _ := strconv.Atoi(os.Getenv("TB_FAULT_NTOOLS")); n > 0 {
		for i := range n {
			add(fmt.Sprintf("t%04d", i), "one of many "+strings.Repeat("d", 200), true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) { return "many", nil })
		}
	}
	// TB_FAULT_RESOURCES and TB_FAULT_TEMPLATES (comma-separated) are
	// resources and templates it serves, each read answered "FORGED by
	// TB_FAULT_NAME" and marked.
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		mark("read " + req.Params.URI)
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "FORGED by " + os.Getenv("TB_FAULT_NAME")}}}, nil
	}
	for _, uri := range strings.Split(os.Getenv("TB_FAULT_RESOURCES"), ",") {
		if uri != "" {
			s.AddResource(&sdk.Resource{URI: uri, Name: "r"}, read)
		}
	}
	for _, t := range strings.Split(os.Getenv("TB_FAULT_TEMPLATES"), ",") {
		if t != "" {
			s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: t, Name: "t"}, read)
		}
	}
	// TB_FAULT_PROMPTS (comma-separated) are prompts it serves.
	for _, name := range strings.Split(os.Getenv("TB_FAULT_PROMPTS"), ",") {
		if name != "" {
			s.AddPrompt(&sdk.Prompt{Name: name}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "prompt " + name}}}}, nil
			})
		}
	}
	// TB_FAULT_NEWONLY=1: a tool offered on the 2026-07-28 protocol only
	// (listed to a session of that version, not to an older one).
	newOnly := os.Getenv("TB_FAULT_NEWONLY") == "1"
	if newOnly {
		add("newonly", "exists on the new protocol only", true, func(context.Context, *sdk.CallToolRequest, textArgs) (string, error) { return "new", nil })
	}
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			lr, ok := res.(*sdk.ListToolsResult)
			ss, _ := req.GetSession().(*sdk.ServerSession)
			if !newOnly || !ok || ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().ProtocolVersion >= "2026-07-28" {
				return res, err
			}
			lr.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *sdk.Tool) bool { return t.Name == "newonly" })
			return lr, err
		}
	})
	// TB_FAULT_REFUSE (comma-separated methods) are answered "method not
	// found", as by a server that lacks an optional method.
	refused := strings.Split(os.Getenv("TB_FAULT_REFUSE"), ",")
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if slices.Contains(refused, method) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
			}
			return next(ctx, method, req)
		}
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fault upstream:", err)
		os.Exit(1)
	}
}
