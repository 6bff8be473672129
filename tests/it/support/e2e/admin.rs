//! A client of the admin API for tests: bearer token, JSON in and out, the status, the
//! `ETag` and the body of every answer.

use serde_json::Value;

use super::Tenant;

/// A client of a cluster the API created (its answer to a create or a rotation).
pub fn tenant_of(c: &Value) -> Tenant {
    Tenant {
        host: format!(
            "{}.{}.localhost",
            c["hostname"].as_str().unwrap(),
            c["region"].as_str().unwrap()
        ),
        user: c["username"].as_str().unwrap().into(),
        pass: c["password"].as_str().unwrap().into(),
    }
}

/// The admin API of a running edge.
#[derive(Debug, Clone)]
pub struct Admin {
    pub url: String,
    pub token: String,
}

/// One answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub etag: Option<String>,
    /// The `Retry-After` header (a 503's).
    pub retry_after: Option<String>,
    pub body: Value,
}

impl Answer {
    /// The body, after checking the status.
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status, status, "{}", self.body);
        self.body
    }

    /// The error's reason.
    pub fn reason(&self) -> String {
        self.body["error"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

impl Admin {
    /// A request with extra headers.
    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let agent = searchgate::outbound::agent(
            "test",
            std::time::Duration::from_secs(60),
            Default::default(),
        );
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Content-Type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let mut resp = agent
            .run(req.body(bytes).unwrap())
            .expect("the admin API answers");
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
        };
        let etag = header("etag");
        let retry_after = header("retry-after");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}"));
        Answer {
            status,
            etag,
            retry_after,
            body,
        }
    }

    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        self.call_with(method, path, body, &[])
    }

    /// `POST /v1/clusters` with `body`; the created cluster (201).
    pub fn create(&self, body: Value) -> Value {
        self.call("POST", "/v1/clusters", Some(&body)).expect(201)
    }

    /// `PUT /v1/clusters/{id}/plan`: the cluster on `plan` (200).
    pub fn set_plan(&self, id: &str, plan: &str) -> Value {
        let body = serde_json::json!({ "plan": plan });
        self.call("PUT", &format!("/v1/clusters/{id}/plan"), Some(&body))
            .expect(200)
    }

    /// `GET /v1/clusters/{id}`.
    pub fn show(&self, id: &str) -> Value {
        self.call("GET", &format!("/v1/clusters/{id}"), None)
            .expect(200)
    }

    /// The overage ladder's steps of cluster `id` in the audit log (each checked to be by
    /// `system`), oldest first: the step (`normal` when the overage ended), whether it was
    /// extreme, and the cluster's mode after it.
    pub fn overage_steps(&self, id: &str) -> Vec<(String, bool, String)> {
        let audit = self
            .call("GET", &format!("/v1/audit?cluster={id}"), None)
            .expect(200);
        let mut steps: Vec<(String, bool, String)> = audit["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "cluster.overage")
            .map(|e| {
                assert_eq!(e["actor"], "system", "{e}");
                let o = &e["after"]["overage"];
                (
                    o["step"].as_str().unwrap_or("normal").to_string(),
                    o["extreme"] == true,
                    e["after"]["mode"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        steps.reverse();
        steps
    }
}
