"""`proctor console`: the live web page over one governed gateway."""
