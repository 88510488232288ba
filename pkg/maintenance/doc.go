// Package maintenance is the arithmetic of maintenance windows: when a
// window opens and closes in its time zone, and whether the nodes of a
// MachineConfigPool may be disrupted at a given instant. It does no I/O
// and never reads the clock: every answer is for a time the caller passes.
//
// Build windows with New or FromAPI, then ask Evaluate(now, pool, windows)
// for a Decision, or a Window for its State at an instant. Schedules are
// read on the wall clock of the window's time zone (see Schedule for what
// happens when the clocks change); durations are elapsed time. Binaries
// that use it should import time/tzdata, so that time zones load on images
// without a zoneinfo database.
package maintenance
