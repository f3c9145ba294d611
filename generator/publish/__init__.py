"""The built site: MkDocs, the sanitizer and reading plugins, the check of the finished site, deploy,
and the workspace `digest init` writes."""
