package advisor

import (
	"fmt"

	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
)

// Exit codes, as diff(1) uses them: 0 nothing to do, 1 something to do
// (or declined), 2 trouble.
const (
	exitOK      = 0
	exitChanges = 1
	exitError   = 2
)

// exitCodeError ends the command with a code other than exitError, after
// the command has said why on stdout.
type exitCodeError struct {
	code int
}

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// oneLine is the single line printed after "Error: ".
func oneLine(err error) string { return explain.Line(err) }

// flatten keeps an error on one line.
func flatten(s string) string { return explain.Flatten(s) }
