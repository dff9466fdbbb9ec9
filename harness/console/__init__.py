"""`proctor console`: the live web page over the governed gateway."""
