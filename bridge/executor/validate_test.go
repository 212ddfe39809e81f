package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// Issue 45 (item 7): a null for an optional argument is judged as not
// given (SEP-2243 omits a header parameter sent null), a null for a
// required one is refused and the refusal says null, not the schema
// checker's "<invalid reflect.Value>"; a well-typed value passes.
func TestANullArgument(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"verbose":{"type":"boolean"},"region":{"type":"string"}},"required":["region"]}`), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := &Tool{InputSchema: &s, resolved: r}
	if err := tool.validate(json.RawMessage(`{"region":"eu","verbose":null}`)); err != nil {
		t.Fatalf("an optional verbose: null is refused: %v", err)
	}
	err = tool.validate(json.RawMessage(`{"region":null}`))
	if err == nil || strings.Contains(err.Error(), "reflect") || !strings.Contains(err.Error(), "null") {
		t.Fatalf("a required region: null refused as %v", err)
	}
	if err := tool.validate(json.RawMessage(`{"region":"eu","verbose":true}`)); err != nil {
		t.Fatalf("verbose: true: %v", err)
	}
	if err := tool.validate(json.RawMessage(`{"region":"eu","verbose":"yes"}`)); err == nil {
		t.Fatal(`verbose: "yes" passes a boolean's schema`)
	}
}
