package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Proposal states.
const (
	Pending  = "pending"
	Approved = "approved"
	Rejected = "rejected"
	Applied  = "applied"
	Failed   = "failed"
)

// Edit replaces the one occurrence of Original in a file with Replacement.
type Edit struct {
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
}

// FileChange is a proposal's edits to one file and the file's content hash
// when the proposal was made.
type FileChange struct {
	Path     string `json:"path"`
	BaseHash string `json:"baseHash"`
	// InBuffer: the base is an editor's unsaved buffer, not the file on disk.
	InBuffer bool `json:"inBuffer,omitempty"`
	// Create: the file does not exist; the proposal creates it with its one
	// edit's replacement (an edit whose original is empty).
	Create bool   `json:"create,omitempty"`
	Edits  []Edit `json:"edits"`
}

// Proposal is a set of file changes applied all together or not at all,
// and only after an operator approved exactly this content.
type Proposal struct {
	ID        string       `json:"id"`
	RequestID string       `json:"requestId,omitempty"`
	State     string       `json:"state"`
	Files     []FileChange `json:"files"`
	// ContentHash covers the files, base hashes and edits: what an operator
	// approves.
	ContentHash string `json:"contentHash"`
	// Description is the AI's account of the change, shown to the operator.
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
	// Deferred is when an operator last skipped deciding; the proposal
	// stays pending.
	Deferred  time.Time `json:"deferred,omitzero"`
	Decided   time.Time `json:"decided,omitzero"`
	DecidedBy string    `json:"decidedBy,omitempty"`
	// Outcome of the terminal state: its code and message, and the preview
	// (unified diff) of what was, or would have been, applied.
	Code    events.Code `json:"code,omitempty"`
	Message string      `json:"message,omitempty"`
	Preview string      `json:"preview,omitempty"`
	// Applying is set, durably, before proposal.applying is recorded: a
	// restart that finds it without a journal knows the apply stopped
	// before any file was written, and closes the step.
	Applying bool `json:"applying,omitempty"`
}

// MaxProposalBytes bounds the edits of one proposal (originals and
// replacements together), so that a proposal and its diff always fit in one
// pipe frame and an operator can always list, show and decide. A larger one
// is refused at creation with TooLarge.
const MaxProposalBytes = 192 << 10

// MaxDescriptionBytes bounds a proposal's description.
const MaxDescriptionBytes = 4 << 10

// MaxPreviewBytes bounds the diff `proposals.show` carries.
const MaxPreviewBytes = 512 << 10

// summary is pr as lists carry it: no edits, no diff (show has them), so a
// list stays small however large the proposals are.
func summary(pr *Proposal) *Proposal {
	s := *pr
	s.Files = make([]FileChange, len(pr.Files))
	for i, f := range pr.Files {
		s.Files[i] = FileChange{Path: f.Path, BaseHash: f.BaseHash, InBuffer: f.InBuffer, Create: f.Create, Edits: []Edit{}}
	}
	s.Preview = ""
	return &s
}

// contentHash is the SHA-256 of the canonical JSON of files.
func contentHash(files []FileChange) string {
	b, _ := json.Marshal(files)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
