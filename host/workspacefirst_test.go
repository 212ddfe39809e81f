package host

import (
	"testing"
)

// B6: a workspace's own function is what function:Name means, however
// many functions of that name the standard library and the dependencies
// have; those count only when the workspace has none.
func TestWorkspaceSymbolsComeFirst(t *testing.T) {
	std := []Symbol{
		{Name: "Validate", Kind: "function", Container: "net/http", Location: Location{Path: "/usr/local/go/src/net/http/v.go", Line: 3}},
		{Name: "Validate", Kind: "function", Container: "example.com/dep", Location: Location{Path: "/root/go/pkg/mod/example.com/dep/v.go", Line: 9}},
	}
	own := Symbol{Name: "Validate", Kind: "function", Container: "example.com/app/auth", Location: Location{Path: "auth/validate.go", Line: 12}}
	find := func(found []Symbol) SymbolFinder {
		return func(string) ([]Symbol, error) { return found, nil }
	}
	ref := resolveSymbol("function:Validate", find(append(std[:1:1], own, std[1])), 0)
	if !ref.OK || ref.Path != "auth/validate.go" || ref.Line != 12 {
		t.Fatalf("a unique workspace function beside two outside it: %+v", ref)
	}
	// Twins: only outside the workspace, one is found and two are
	// ambiguous, as before; two in the workspace stay ambiguous.
	if ref := resolveSymbol("function:Validate", find(std[:1]), 0); !ref.OK || ref.Path != std[0].Path {
		t.Fatalf("one standard library function: %+v", ref)
	}
	if ref := resolveSymbol("function:Validate", find(std), 0); ref.OK {
		t.Fatalf("two functions outside the workspace were resolved to one: %+v", ref)
	}
	other := own
	other.Path = "billing/validate.go"
	if ref := resolveSymbol("function:Validate", find([]Symbol{own, other, std[0]}), 0); ref.OK {
		t.Fatalf("two workspace functions were resolved to one: %+v", ref)
	}
}
