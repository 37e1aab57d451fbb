// Package eventstest provides a Recorder publisher for other packages'
// tests: it validates every event against its schema in events/ exactly as
// the real publishers do, keeps the valid ones, and can be told to fail.
//
// It is imported by tests only and must not be imported by production code.
package eventstest
