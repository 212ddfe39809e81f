package host

import (
	"context"
	"encoding/json"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// Caller sends one request to a host: a pipe.Client or a Router.
type Caller interface {
	Call(ctx context.Context, req pipe.Request) (pipe.Response, error)
}

// Client is the operator's typed way to a workspace host (the CLI's and
// the UI's): one method per operator command, its answer decoded, a
// host's refusal an *events.Err with the host's code.
type Client struct {
	Host Caller
	// NewID gives each call its request and operation ids (the process's
	// recorder, so the host's events join the operator's).
	NewID func() events.ID
}

// Committed is what review.commit made: the commit and its files.
type Committed struct {
	Commit string   `json:"commit"`
	Files  []string `json:"files"`
}

// Proposals lists every proposal, oldest first, without its edits.
func (c Client) Proposals(ctx context.Context) ([]Proposal, error) {
	var out []Proposal
	return out, c.call(ctx, pipe.CmdProposalsList, nil, &out)
}

// Proposal is one proposal whole, with the diff approving it would apply
// now.
func (c Client) Proposal(ctx context.Context, id string) (Proposal, error) {
	var out Proposal
	return out, c.call(ctx, pipe.CmdProposalsShow, ShowArgs{ID: id}, &out)
}

// Decide approves (and applies) or rejects a proposal, bound to the
// content hash the operator saw.
func (c Client) Decide(ctx context.Context, a DecideArgs) (Proposal, error) {
	var out Proposal
	return out, c.call(ctx, pipe.CmdProposalsDecide, a, &out)
}

// Reset rejects every proposal not yet applied and says how many.
func (c Client) Reset(ctx context.Context) (int, error) {
	var out struct {
		Cleared int `json:"cleared"`
	}
	return out.Cleared, c.call(ctx, pipe.CmdProposalsReset, nil, &out)
}

// SetFocus sets the operator's active document and selection.
func (c Client) SetFocus(ctx context.Context, f Focus) (Focus, error) {
	var out Focus
	return out, c.call(ctx, pipe.CmdSetFocus, f, &out)
}

// Reviews lists the review's versions, without their content.
func (c Client) Reviews(ctx context.Context) ([]ReviewSummary, error) {
	var out []ReviewSummary
	return out, c.call(ctx, pipe.CmdReviewsList, nil, &out)
}

// Review returns version n whole (0: the newest).
func (c Client) Review(ctx context.Context, n int) (ReviewVersion, error) {
	var out ReviewVersion
	return out, c.call(ctx, pipe.CmdReviewsShow, map[string]int{"version": n}, &out)
}

// Commit commits the applied proposals' files with message.
func (c Client) Commit(ctx context.Context, message string) (Committed, error) {
	var out Committed
	return out, c.call(ctx, pipe.CmdReviewCommit, CommitArgs{Message: message}, &out)
}

// Tree is the workspace's files.
func (c Client) Tree(ctx context.Context) (Tree, error) {
	var out Tree
	return out, c.call(ctx, pipe.CmdWorkspaceTree, nil, &out)
}

// File is one workspace file's text.
func (c Client) File(ctx context.Context, path string) (FileView, error) {
	var out FileView
	return out, c.call(ctx, pipe.CmdWorkspaceFile, map[string]string{"path": path}, &out)
}

// call sends command with payload and decodes the answer into out.
func (c Client) call(ctx context.Context, command string, payload, out any) error {
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		raw = b
	}
	resp, err := c.Host.Call(ctx, pipe.Request{Command: command, RequestID: c.NewID().String(), OperationID: c.NewID().String(), Payload: raw})
	if err != nil {
		return err
	}
	if !resp.OK {
		return &events.Err{Code: resp.Code, Msg: resp.Message}
	}
	if len(resp.Payload) == 0 {
		return nil
	}
	return json.Unmarshal(resp.Payload, out)
}
