//! An agent and a client built with the official SDK exchange every kind of
//! extension message typed, in both namespaces, over an in-memory connection.

use std::sync::{Arc, Mutex};

use acp_extension_core::Namespace;
use acp_extension_core::methods::{
    AnyExtensionNotification, AnyExtensionRequest, ExtensionNotification, ExtensionRequest,
    ExtensionResponse, Namespaced, NamespacedNotification,
};
use acp_extension_core::rate_limits::{RateLimitsGetRequest, RateLimitsSnapshot};
use acp_extension_core::session::{SteerApplied, SteerOutcome, SteerResponse};
use agent_client_protocol::{Agent, Client, ErrorCode, UntypedMessage};
use serde_json::json;

/// The agent under test: one handler for every extension request; on a steer
/// it also sends `steer_applied` in the request's namespace.
fn agent() -> impl agent_client_protocol::ConnectTo<Client> {
    Agent.v1().on_receive_request(
        async |req: AnyExtensionRequest, responder, cx| match req.request {
            ExtensionRequest::RateLimitsGet(_) => responder.respond(
                ExtensionResponse::RateLimitsGet(RateLimitsSnapshot::new(vec![])),
            ),
            ExtensionRequest::SessionSteer(steer) => {
                cx.send_notification(NamespacedNotification::new(
                    req.namespace,
                    SteerApplied::new(steer.session_id.clone(), steer.steer_id.clone()),
                ))?;
                responder.respond(ExtensionResponse::SessionSteer(SteerResponse::new(
                    SteerOutcome::Injected,
                )))
            }
            _ => responder.respond_with_error(agent_client_protocol::Error::method_not_found()),
        },
        agent_client_protocol::on_receive_request!(),
    )
}

#[tokio::test]
async fn typed_requests_and_notifications_in_both_namespaces() {
    let received: Arc<Mutex<Vec<(Namespace, String)>>> = Arc::default();
    let sink = received.clone();
    Client
        .v1()
        .on_receive_notification(
            async move |n: AnyExtensionNotification, _cx| {
                if let ExtensionNotification::SessionSteerApplied(applied) = n.notification {
                    sink.lock().unwrap().push((n.namespace, applied.steer_id.clone()));
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(agent(), async |cx| {
            for ns in Namespace::ALL {
                let snapshot = cx
                    .send_request(Namespaced::new(ns, RateLimitsGetRequest::new()))
                    .block_task()
                    .await?;
                assert!(snapshot.rate_limits.is_empty());
            }
            let steer = json!({"sessionId": "s1", "steerId": "st-ua", "prompt": [{"type": "text", "text": "also"}]});
            let out = cx
                .send_request(UntypedMessage::new("_ua/session/steer", steer)?)
                .block_task()
                .await?;
            assert_eq!(out, json!({"outcome": "injected"}));
            let steer = json!({"sessionId": "s1", "steerId": "st-lody", "prompt": []});
            cx.send_request(UntypedMessage::new("_lody/session/steer", steer)?)
                .block_task()
                .await?;
            Ok(())
        })
        .await
        .unwrap();
    let got = received.lock().unwrap().clone();
    assert_eq!(
        got,
        vec![
            (Namespace::Ua, "st-ua".to_string()),
            (Namespace::Lody, "st-lody".to_string())
        ]
    );
}

#[tokio::test]
async fn bad_params_get_invalid_params_naming_the_field() {
    Client
        .v1()
        .connect_with(agent(), async |cx| {
            let err = cx
                .send_request(UntypedMessage::new(
                    "_lody/session/steer",
                    json!({"sessionId": "s", "prompt": []}),
                )?)
                .block_task()
                .await
                .expect_err("steerId is required");
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
            assert!(err.message.contains("/steerId"), "{}", err.message);
            // The connection is still usable.
            cx.send_request(Namespaced::new(
                Namespace::Lody,
                RateLimitsGetRequest::new(),
            ))
            .block_task()
            .await?;
            Ok(())
        })
        .await
        .unwrap();
}
