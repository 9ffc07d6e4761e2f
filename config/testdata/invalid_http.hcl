http {
  listen            = "localhost"
  token_file        = "no-such-token"
  viewer_token_file = "no-such-token"
}
