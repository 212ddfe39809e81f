package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// Issue 45 (item 7): a null argument's refusal says null, not the schema
// checker's "<invalid reflect.Value>"; a well-typed value passes.
func TestANullArgumentIsNamedNull(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"verbose":{"type":"boolean"}}}`), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := &Tool{resolved: r}
	err = tool.validate(json.RawMessage(`{"verbose":null}`))
	if err == nil || strings.Contains(err.Error(), "reflect") || !strings.Contains(err.Error(), "null") {
		t.Fatalf("verbose: null refused as %v", err)
	}
	if err := tool.validate(json.RawMessage(`{"verbose":true}`)); err != nil {
		t.Fatalf("verbose: true: %v", err)
	}
}
