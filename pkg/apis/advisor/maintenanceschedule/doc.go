// Package maintenanceschedule is the arithmetic of maintenance windows:
// when a window opens and closes in its time zone, and whether the nodes
// of a MachineConfigPool may be disrupted at a given instant. It does no
// I/O and never reads the clock: every answer is for a time the caller
// passes.
//
// It sits under pkg/apis because the API's validation checks a window
// with the arithmetic that runs it (schedule, duration, time zone, the
// cost of evaluating it), and pkg/apis imports nothing above it.
// pkg/maintenance gives the same names to the rest of the server, with
// the lister of an informer's windows.
//
// Build windows with New or FromAPI, then ask Evaluate(now, pool, windows)
// for a Decision, or a Window for its State at an instant. Schedules are
// read on the wall clock of the window's time zone (see Schedule for what
// happens when the clocks change); durations are elapsed time. Binaries
// that use it should import time/tzdata, so that time zones load on images
// without a zoneinfo database.
package maintenanceschedule
