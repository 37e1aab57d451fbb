package domain

import "time"

// MachineWatch is one onboarding wait parked on the machine watch: the
// watcher (WatchSites) completes TaskToken when MAAS logs a status change or
// an error for the machine after event After, or at WakeAt when nothing
// happened. One per (site, machine): a newer attempt or run replaces it.
type MachineWatch struct {
	SiteID       string `json:"site_id" dynamodbav:"site_id"`
	SystemID     string `json:"system_id" dynamodbav:"system_id"`
	OnboardingID string `json:"onboarding_id" dynamodbav:"onboarding_id"`
	Attempt      int    `json:"attempt" dynamodbav:"attempt"`
	Run          int    `json:"run" dynamodbav:"run"`
	// Target is what the wait waits for (ready, deployed, deployable,
	// released).
	Target string `json:"target" dynamodbav:"target"`
	// TaskToken completes the parked execution. It is a credential for that
	// execution: Secret keeps it out of logs, errors and events.
	TaskToken Secret `json:"task_token" dynamodbav:"task_token"`
	// After is the newest MAAS event id the wait has already seen.
	After int64 `json:"after" dynamodbav:"after"`
	// WakeAt is when the wait is due a full check whatever MAAS logged.
	WakeAt       time.Time `json:"wake_at" dynamodbav:"wake_at"`
	RegisteredAt time.Time `json:"registered_at" dynamodbav:"registered_at"`
}

// WatchCursor is how far the watcher has read a site's MAAS event log:
// After is the newest event id read, ListedAt when the round that read it
// listed the watches.
type WatchCursor struct {
	SiteID   string    `json:"site_id" dynamodbav:"site_id"`
	After    int64     `json:"after" dynamodbav:"after"`
	ListedAt time.Time `json:"listed_at" dynamodbav:"listed_at"`
}
