//! `/goal set|pause|resume|clear` and `_meta.<ns>.goalControl`.

use super::*;

impl Turn {
    pub(super) fn goal_info(&self, goal: Option<&Goal>) {
        self.send(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().meta(
                self.mb()
                    .with::<fields::Goal>(goal.map(Goal::snapshot))
                    .build(),
            ),
        ));
    }

    pub(super) async fn goal(&mut self, cmd: GoalCmd) -> Step {
        let now = time::now();
        match cmd {
            GoalCmd::Set(objective) => {
                let goal = self.with(|s, _| {
                    s.goal = Some(Goal::new(objective, now));
                    s.goal.clone()
                })?;
                self.goal_info(goal.as_ref());
                self.goal_step().await
            }
            GoalCmd::Resume => {
                let goal = self.with(|s, _| {
                    if let Some(g) = &mut s.goal {
                        g.status = GoalStatus::Active;
                        g.last_reason = None;
                        g.updated = now;
                    }
                    s.goal.clone()
                })?;
                match goal {
                    Some(g) => {
                        self.goal_info(Some(&g));
                        self.goal_step().await
                    }
                    None => {
                        self.final_answer("There is no goal to resume.");
                        Ok(())
                    }
                }
            }
            GoalCmd::Pause => {
                let goal = self.with(|s, _| {
                    if let Some(g) = &mut s.goal {
                        g.status = GoalStatus::Paused;
                        g.last_reason = Some("paused by the client".to_owned());
                        g.updated = now;
                    }
                    s.goal.clone()
                })?;
                match goal {
                    Some(g) => {
                        self.goal_info(Some(&g));
                        self.final_answer(&format!("Goal paused: {}", g.objective));
                    }
                    None => self.final_answer("There is no goal to pause."),
                }
                Ok(())
            }
            GoalCmd::Clear => {
                self.with(|s, _| s.goal = None)?;
                self.goal_info(None);
                self.final_answer("Goal cleared.");
                Ok(())
            }
        }
    }

    pub(super) async fn goal_step(&mut self) -> Step {
        let goal = self.with(|s, _| {
            s.goal.as_mut().map(|g| {
                g.iterations += 1;
                g.clone()
            })
        })?;
        let Some(goal) = goal else {
            self.final_answer("The goal was cleared.");
            return Ok(());
        };
        self.say(
            "commentary",
            &format!(
                "Working toward the goal: {} (iteration {}).",
                goal.objective, goal.iterations
            ),
        );
        self.sleep(0.0).await?;
        self.final_answer(&format!(
            "Goal iteration {} done: {}",
            goal.iterations, goal.objective
        ));
        let (input, output, cache) = self.tokens();
        let goal = self.with(|s, _| {
            if let Some(g) = &mut s.goal {
                g.tokens_used += input + output + cache;
                g.updated = time::now();
            }
            s.goal.clone()
        })?;
        self.goal_info(goal.as_ref());
        Ok(())
    }
}
