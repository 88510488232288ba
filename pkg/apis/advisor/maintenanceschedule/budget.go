package maintenanceschedule

import (
	"context"
	"errors"
	"fmt"
)

// MaxSteps bounds the work of one evaluation (Evaluate, State): a step is
// about 40 ns of work on an idle core (a day a search looks at, a run of
// back-to-back openings crossed, or a month of a run that goes on from
// day to day; a zone period looked up costs 4), so an evaluation that
// runs out takes about 2 ms. Schedules make one interval of their
// back-to-back openings arithmetically, so a window costs tens to
// hundreds of steps per answer; what can cost more is a set of windows
// whose openings chain into each other, or freezes that cover every Allow
// opening for years: such an evaluation ends with ErrTooComplex instead
// of holding a plan, an approval or the controller.
const MaxSteps = 50000

// WindowSteps is what one window may need alone: validation refuses a
// window that needs more (CheckCost), a fiftieth of MaxSteps. Every
// window the duration rule (CheckDuration) admits needs fewer, about
// 800 at most: a leap-day window lasting the four years to the next, in
// a zone whose clocks change twice a year, and windows open all the time
// across the changes of time of five years cost the most.
const WindowSteps = 1000

// ErrTooComplex is the error of an evaluation that exceeds MaxSteps.
var ErrTooComplex = errors.New("too complex")

// budget counts the steps of one evaluation and watches its context.
// Running out panics with budgetExceeded, recovered where the evaluation
// began (Evaluate, State): the arithmetic stays free of error plumbing.
type budget struct {
	ctx   context.Context
	left  int
	spent int
}

type budgetExceeded struct{ err error }

func newBudget(ctx context.Context, steps int) *budget {
	if ctx == nil {
		ctx = context.Background()
	}
	return &budget{ctx: ctx, left: steps}
}

// spend takes n steps; the first and every 64th check the context.
func (b *budget) spend(n int) {
	if b == nil {
		return // not counted: Schedule.Next, Window.NextOpening
	}
	before := b.spent
	b.left -= n
	b.spent += n
	if b.left < 0 {
		panic(budgetExceeded{fmt.Errorf("%w: more than %d steps (openings that chain into each other, or a freeze over the Allow openings, for years)", ErrTooComplex, before)})
	}
	if before == 0 || before/64 != b.spent/64 {
		if err := b.ctx.Err(); err != nil {
			panic(budgetExceeded{err})
		}
	}
}

// recover turns a budgetExceeded panic into *err, worded by wrap (given
// the cause: ErrTooComplex or the context's error); other panics go on.
func (b *budget) recover(err *error, wrap func(cause error) error) {
	r := recover()
	if r == nil {
		return
	}
	be, ok := r.(budgetExceeded)
	if !ok {
		panic(r)
	}
	*err = &evalError{msg: wrap(be.err).Error(), cause: be.err}
}

// evalError keeps the cause (ErrTooComplex, context.Canceled,
// context.DeadlineExceeded) for errors.Is.
type evalError struct {
	msg   string
	cause error
}

func (e *evalError) Error() string { return e.msg }
func (e *evalError) Unwrap() error { return e.cause }
