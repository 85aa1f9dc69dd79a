"""Git forges' pull-request APIs (GitHub, GitLab) and a fake GitHub for tests."""
