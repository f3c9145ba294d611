"""`digest ask`: questions answered from the archive of committed editions."""
