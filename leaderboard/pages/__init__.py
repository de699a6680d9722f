"""The board's pages: views, their forms and charts, and the responses shared per board state."""
