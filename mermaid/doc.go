// Package mermaid renders a run (or a session) as a Mermaid sequence
// diagram.
//
// The output is deterministic: participants in the canonical order of
// events.Participants (only those that appear), one arrow per event, no ids
// or clock times unless Options.Timings asks for offsets. Every label is
// escaped to a safe alphabet, everything else written as a Mermaid entity
// (#58; for ':'), so no text from arguments, paths or errors can end a
// statement, add a participant, an arrow, a note or a directive. The first
// failing event is drawn inside a highlighted rect.
package mermaid
