package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// direct calls the host's handlers as the pipe server would, answering
// with the response a client receives.
type direct struct{ h *Host }

func (d direct) Call(ctx context.Context, req pipe.Request) (pipe.Response, error) {
	v, err := d.h.Handlers()[req.Command](ctx, req)
	if err != nil {
		e := events.AsErr(err, events.CodeToolError)
		return pipe.Response{V: pipe.Version, OperationID: req.OperationID, Code: e.Code, Message: e.Msg}, nil
	}
	b, _ := json.Marshal(v)
	return pipe.Response{V: pipe.Version, OperationID: req.OperationID, OK: true, Payload: b}, nil
}

// The typed client decodes each operator command's answer and turns a
// host's refusal into its code.
func TestClientDecodesAnswersAndCodes(t *testing.T) {
	h, _ := newHost(t)
	ctx := context.Background()
	c := Client{Host: direct{h}, NewID: events.NewID}
	if _, err := call(t, h, pipe.CmdProposeEdits, ProposeArgs{Files: []FileChange{{Path: "a.go", Edits: []Edit{{Original: "return 1", Replacement: "return 7"}}}}}); err != nil {
		t.Fatal(err)
	}
	list, err := c.Proposals(ctx)
	if err != nil || len(list) != 1 || list[0].State != Pending {
		t.Fatalf("proposals: %+v %v", list, err)
	}
	shown, err := c.Proposal(ctx, list[0].ID)
	if err != nil || shown.Preview == "" {
		t.Fatalf("show: %+v %v", shown, err)
	}
	if _, err := c.Decide(ctx, DecideArgs{ID: shown.ID, Approve: true, ContentHash: "0000", By: "op"}); events.CodeOf(err) != events.CodeHashChanged {
		t.Fatalf("a decision on another content hash: %v", err)
	}
	done, err := c.Decide(ctx, DecideArgs{ID: shown.ID, Approve: true, ContentHash: shown.ContentHash, By: "op"})
	if err != nil || done.State != Applied {
		t.Fatalf("decide: %+v %v", done, err)
	}
	if n, err := c.Reset(ctx); err != nil || n != 0 {
		t.Fatalf("reset with nothing open: %d %v", n, err)
	}
	if f, err := c.SetFocus(ctx, Focus{Path: "a.go", StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 5}); err != nil || f.Path != "a.go" {
		t.Fatalf("focus: %+v %v", f, err)
	}
	if v, err := c.File(ctx, "a.go"); err != nil || v.Content == "" {
		t.Fatalf("file: %+v %v", v, err)
	}
	if _, err := c.File(ctx, "../escape"); events.CodeOf(err) != events.CodePathRefused {
		t.Fatalf("a path outside the root: %v", err)
	}
	if _, err := c.Tree(ctx); err != nil {
		t.Fatalf("tree: %v", err)
	}
	if _, err := c.Commit(ctx, ""); events.CodeOf(err) != events.CodeInvalidArguments {
		t.Fatalf("a commit without a message: %v", err)
	}
}
