// Package maintenance is the arithmetic of maintenance windows, as the
// server's controllers, plans and commands use it, and the lister of the
// windows an informer holds. The arithmetic itself is
// pkg/apis/advisor/maintenanceschedule, where the API's validation can
// use it too: the names here are its names.
//
// Build windows with New or FromAPI, then ask Evaluate(now, pool, windows)
// for a Decision, or a Window for its State at an instant. Binaries that
// use it should import time/tzdata, so that time zones load on images
// without a zoneinfo database.
package maintenance
