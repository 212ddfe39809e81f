package host

import (
	"fmt"
	"strings"
)

// A review is read long after it was presented, while the code keeps
// changing (seed 91: its [file:line][] references pointed at whatever had
// moved onto those lines). Each reference keeps the text of its line
// (Ref.Quote); when the review is read, a line that no longer holds that
// text is looked for again by it.

// quote is line n of file p, trimmed ("" when it cannot be read).
func (r *Reviews) quote(p string, n int) string {
	b, err := r.ws.ReadFile(p)
	if err != nil {
		return ""
	}
	return lineText(strings.Split(string(b), "\n"), n)
}

// lineText is line n (1-based) of lines, trimmed; "" past their end.
func lineText(lines []string, n int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[n-1])
}

// follow returns refs as they stand in the files now: a reference whose
// line still holds its quote is unchanged; one whose quote is now on
// exactly one other line moves there (a range moves with it; Moved keeps
// the line it was written against). A line edited in place — the usual
// case: a review describing the edit it proposed, read after the edit was
// applied — keeps its reference where it was; one past the file's end, or
// in a file gone, is broken. refs is not changed.
func (r *Reviews) follow(refs []Ref) []Ref {
	out := make([]Ref, len(refs))
	copy(out, refs)
	files := map[string][]string{} // each file read once
	for i := range out {
		ref := &out[i]
		if !ref.OK || ref.Quote == "" {
			continue
		}
		lines, read := files[ref.Path]
		if !read {
			b, err := r.ws.ReadFile(ref.Path)
			if err != nil {
				ref.OK, ref.Problem = false, "file not readable in the workspace: "+err.Error()
				continue
			}
			lines = strings.Split(string(b), "\n")
			files[ref.Path] = lines
		}
		if lineText(lines, ref.Line) == ref.Quote {
			continue
		}
		at := -1
		for j, l := range lines {
			if strings.TrimSpace(l) == ref.Quote {
				if at >= 0 {
					at = -2 // more than one: no guess
					break
				}
				at = j + 1
			}
		}
		switch {
		case at > 0:
			if ref.EndLine != 0 {
				ref.EndLine += at - ref.Line
			}
			ref.Moved, ref.Line = ref.Line, at
		case ref.Line > len(lines):
			ref.OK, ref.Problem = false, fmt.Sprintf("line %d is past the file's end now (%d lines; it held %q)", ref.Line, len(lines), ref.Quote)
		}
	}
	return out
}
