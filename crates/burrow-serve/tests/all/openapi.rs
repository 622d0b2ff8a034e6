//! `/v1/openapi.json`: the OpenAPI document generated from the handlers' types lists every endpoint, its bodies and the bearer scheme, and names the fields the API really sends.

use serde_json::{Value, json};

use super::support::{Setup, start};

#[tokio::test]
async fn the_openapi_document_describes_every_endpoint_and_its_bodies() {
    let s = start(Setup::default()).await;
    let r = s
        .client
        .get(s.url("/v1/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let doc: Value = r.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/v1/threads", "get"),
        ("/v1/threads/{thread}", "get"),
        ("/v1/threads/{thread}/messages", "post"),
        ("/v1/threads/{thread}/answers", "post"),
        ("/v1/threads/{thread}/stop", "post"),
        ("/v1/runs/{run}/events", "get"),
    ] {
        assert!(paths[path][method].is_object(), "{path} {method}");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["MessageBody"]["required"], json!(["content"]));
    // The response schema names exactly the fields a real response has.
    let posted: Value = s.message("t1", json!({"content": "hi"})).await;
    let mut sent: Vec<&String> = posted.as_object().unwrap().keys().collect();
    sent.sort();
    let mut described: Vec<&String> = schemas["MessageResponse"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "result")
        .collect();
    described.sort();
    assert_eq!(sent, described);
    let problem = &schemas["Problem"]["properties"];
    for field in ["type", "title", "status", "detail", "kind"] {
        assert!(problem[field].is_object(), "{field}");
    }
    let events = &paths["/v1/runs/{run}/events"]["get"]["responses"]["200"]["content"];
    assert!(events["text/event-stream"].is_object());
}
