"""Deliveries of an edition: the newsletter and its mail, the chat post and its webhook."""
