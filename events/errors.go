package events

import (
	"errors"
	"fmt"
)

// Err is the one coded error of tracebridge: every package that fails
// with a code returns it, and the code travels unchanged to the event, the
// tool result, the audit envelope, the verdict and the UI. Msg says what
// happened and never repeats the code; the action comes from the code's
// entry in the table (ActionFor).
type Err struct {
	Code Code
	Msg  string
}

// Errorf returns an *Err with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Err {
	return &Err{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (e *Err) Error() string { return string(e.Code) + ": " + e.Msg }

// Action is what an operator can do about e.
func (e *Err) Action() string { return ActionFor(e.Code) }

// AsErr returns err as an *Err: itself when it carries a code, else an
// *Err with fallback and err's text.
func AsErr(err error, fallback Code) *Err {
	var e *Err
	if errors.As(err, &e) {
		return e
	}
	return &Err{Code: fallback, Msg: err.Error()}
}

// CodeOf is err's code, or "" when it carries none.
func CodeOf(err error) Code {
	var e *Err
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
