"""What the site keeps: each edition's record and what is made from records alone."""
