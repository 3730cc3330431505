"""One module per schema revision, oldest first; each is a frozen snapshot, never edited once released."""
