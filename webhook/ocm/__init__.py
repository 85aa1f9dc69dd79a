"""Open Cluster Management: the add-on installVersion lifecycle."""
