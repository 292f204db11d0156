"""How things look: themes, icons, plain text, plot items."""
