package apisim

// WaitingForRV reports whether a read waits for a resourceVersion the
// server has not reached yet: waitForRV has found it missing and the next
// write wakes it. Tests use it to create that resourceVersion only once a
// request waits for it.
func (s *Server) WaitingForRV() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rvWaiters != nil
}

// SendBookmarks runs one tick of the periodic bookmarks now.
func (s *Server) SendBookmarks() { s.sendBookmarks() }
