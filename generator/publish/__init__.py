"""The site stage: MkDocs, the sanitizer, and the check of the finished site."""
