package pipe

import (
	"context"
	"fmt"
)

// Handler serves one command. A *events.Err keeps its code; any other
// error is a ToolError.
type Handler func(ctx context.Context, req Request) (payload any, err error)

// Activation is what an operator must do when no host listens at path.
func Activation(path string) string {
	return fmt.Sprintf("no workspace host listens at %s. Start one for your workspace: `tracebridge up --root <workspace>` (hub, host and UI) or `tracebridge host --root <workspace>`; set TRACEBRIDGE_HOST if it listens elsewhere", path)
}
