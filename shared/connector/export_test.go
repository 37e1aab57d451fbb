package connector

// SetCompactEvery lowers the compaction threshold for a test and returns
// the function that restores it.
func SetCompactEvery(n int) func() {
	old := compactEvery
	compactEvery = n
	return func() { compactEvery = old }
}
