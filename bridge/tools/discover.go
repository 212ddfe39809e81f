package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/proc"
)

// Manifest describes a discovered tool: a *.tool.json file naming a command
// that reads the arguments as JSON on stdin and writes its result as JSON
// on stdout.
type Manifest struct {
	ID           string             `json:"id"`
	Description  string             `json:"description"`
	Category     string             `json:"category,omitempty"`
	Command      []string           `json:"command"` // relative paths resolve against the manifest's directory
	InputSchema  *jsonschema.Schema `json:"inputSchema"`
	Capabilities []string           `json:"capabilities,omitempty"`
	// SideEffects defaults to true: a process may do anything.
	SideEffects *bool `json:"sideEffects,omitempty"`
	// Approval defaults to "always".
	Approval string   `json:"approval,omitempty"`
	Secrets  []string `json:"secrets,omitempty"`
}

// MaxToolOutput caps what a discovered tool may print on stdout.
const MaxToolOutput = 1 << 20

// toolGrace is how long a discovered tool's output is read after its call
// ended and its process group was killed.
const toolGrace = time.Second

// Finding is one thing discovery has to report: a directory scanned (with
// its count), missing, or a manifest refused.
type Finding struct {
	Dir, Manifest string
	Count         int
	Code          events.Code // empty when fine
	Problem       string
}

// Event turns a finding into the event that records it.
func (f Finding) Event() events.Event {
	e := events.Event{Kind: events.KindToolsDiscovered, Outcome: events.OK,
		Attrs: events.A("dir", f.Dir, "count", fmt.Sprint(f.Count))}
	if f.Code != "" {
		e.Outcome, e.Code = events.Error, f.Code
		e.Attrs.Set("problem", f.Problem)
		if f.Manifest != "" {
			e.Attrs.Set("manifest", f.Manifest)
		}
	}
	return e
}

// Discover loads the manifests in dirs. Bad manifests and missing
// directories are findings, not errors: the bridge starts without them.
// Discovered tools always need process.run besides what they declare.
func Discover(dirs []string) ([]*executor.Tool, []Finding) {
	var tools []*executor.Tool
	var findings []Finding
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.tool.json"))
		if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
			findings = append(findings, Finding{Dir: dir, Code: events.CodeDirMissing, Problem: fmt.Sprintf("discovery directory %s does not exist or is not a directory", dir)})
			continue
		}
		if err != nil {
			findings = append(findings, Finding{Dir: dir, Code: events.CodeDirMissing, Problem: err.Error()})
			continue
		}
		sort.Strings(files)
		n := 0
		for _, f := range files {
			t, err := load(f)
			if err != nil {
				findings = append(findings, Finding{Dir: dir, Manifest: f, Code: events.CodeInvalidManifest, Problem: err.Error()})
				continue
			}
			tools = append(tools, t)
			n++
		}
		findings = append(findings, Finding{Dir: dir, Count: n})
	}
	return tools, findings
}

func load(path string) (*executor.Tool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseManifest(path, b)
}

// parseManifest checks a manifest's bytes; path names it in errors and
// anchors relative commands.
func parseManifest(path string, b []byte) (*executor.Tool, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	switch {
	case m.ID == "" || strings.ContainsAny(m.ID, " /\\"):
		return nil, fmt.Errorf("%s: id %q must be non-empty, without spaces or slashes", path, m.ID)
	case len(m.Command) == 0:
		return nil, fmt.Errorf("%s: command is empty", path)
	case m.InputSchema == nil || m.InputSchema.Type != "object":
		return nil, fmt.Errorf("%s: inputSchema must be an object schema", path)
	case m.Approval != "" && m.Approval != "always" && m.Approval != "never":
		return nil, fmt.Errorf("%s: approval %q is not always or never", path, m.Approval)
	}
	dir := filepath.Dir(path)
	cmd := slices.Clone(m.Command)
	if !filepath.IsAbs(cmd[0]) && strings.ContainsRune(cmd[0], filepath.Separator) {
		cmd[0] = filepath.Join(dir, cmd[0])
	}
	side := true
	if m.SideEffects != nil {
		side = *m.SideEffects
	}
	if m.Approval == "" {
		m.Approval = "always"
	}
	caps := m.Capabilities
	if !slices.Contains(caps, config.CapProcessRun) {
		caps = append(slices.Clone(caps), config.CapProcessRun)
	}
	if m.Category == "" {
		m.Category = "discovered"
	}
	return &executor.Tool{
		Descriptor: executor.Descriptor{ID: m.ID, Description: m.Description, Category: m.Category, Source: path,
			Capabilities: caps, SideEffects: side, Approval: m.Approval, Secrets: m.Secrets, Recorded: true},
		InputSchema: m.InputSchema,
		Run:         runCommand(cmd, dir),
	}, nil
}

// runCommand runs the tool's process with the arguments on stdin. Secrets
// arrive as TB_SECRET_<NAME> variables; nothing else of the bridge's
// environment but PATH and HOME is passed.
func runCommand(argv []string, dir string) executor.RunFunc {
	return func(ctx context.Context, c executor.Call) (any, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		// When the call ends, so does the tool and what it started; its
		// output is not waited for past toolGrace (a grandchild holding
		// the pipe open would hold the call).
		proc.OwnGroup(cmd)
		cmd.Cancel = func() error {
			proc.KillGroup(cmd.Process.Pid)
			return cmd.Process.Kill()
		}
		cmd.WaitDelay = toolGrace
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
			"TB_REQUEST_ID=" + c.RequestID.String(), "TB_OPERATION_ID=" + c.OperationID.String()}
		for name, v := range c.Secrets {
			cmd.Env = append(cmd.Env, "TB_SECRET_"+name+"="+v)
		}
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		cmd.Stdin = bytes.NewReader(args)
		var stdout, stderr limitedBuffer
		stdout.max, stderr.max = MaxToolOutput, 4<<10
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if stdout.over {
			return nil, fmt.Errorf("the tool printed more than %d bytes", MaxToolOutput)
		}
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return nil, fmt.Errorf("the tool exited with %d: %s", ee.ExitCode(), strings.TrimSpace(stderr.String()))
			}
			return nil, err
		}
		var out any
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			return nil, fmt.Errorf("the tool's output is not JSON: %v", err)
		}
		return out, nil
	}
}

// limitedBuffer keeps at most max bytes and notes when more came. It is a
// Writer and nothing more: a bytes.Buffer embedded would lend it ReadFrom,
// which io.Copy (exec's copy of a child's output) prefers to Write, and
// the limit would never be checked.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); len(p) > room {
		l.over = true
		l.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.buf.Write(p)
}

func (l *limitedBuffer) Bytes() []byte  { return l.buf.Bytes() }
func (l *limitedBuffer) String() string { return l.buf.String() }

var _ io.Writer = (*limitedBuffer)(nil)
