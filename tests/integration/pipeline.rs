//! The request pipeline every endpoint shares.

use fleetdesk_tests::client::Request;
use fleetdesk_tests::spawn_app;

#[tokio::test(flavor = "multi_thread")]
async fn every_response_carries_a_request_id_even_errors() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let ok = app.client.get("/api/agent/v1/accounts", &key).await;
    assert_eq!(ok.status, 200);
    assert!(ok.header("x-request-id").is_some_and(|v| !v.is_empty()));
    let unknown = app.client.send(Request::new("GET", "/nowhere")).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["request_id"].as_str(), unknown.header("x-request-id"));
    let wrong_method = app.client.send(Request::new("DELETE", "/api/agent/v1/accounts")).await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(wrong_method.json()["request_id"].as_str(), wrong_method.header("x-request-id"));
}
