job "backup" {
  schedule = "@daily"
  command  = "backup.sh"
  overlap  = "replace"
}
